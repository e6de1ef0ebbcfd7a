#!/bin/sh
# bench_all.sh: the six-model benchmark in one command: setup (setup.sh),
# export (export.py --models bench: resnet18, mobilenet_v2, squeezenet1_1,
# vae_decoder_16, vae_decoder_32, bert_encoder; models already in OUT are
# kept), then bench_all.mjs: kiln (tuned database) against ONNX Runtime CPU
# (2 threads) and PyTorch (2 threads, when installed), alternating, with
# median latencies, kiln/peer ratios, output agreement and a JSON file
# (default OUT/bench_all.json).
#
# Usage: bench/models/bench_all.sh [--models a,b] [--kiln PATH] [--out DIR] [--skip-setup]
#                                  [bench_all.mjs options: --db F --tune S --repeat N --rounds R --no-torch ...]
# Without --kiln, uses build/kiln and builds it there first when it is missing.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
models=resnet18,mobilenet_v2,squeezenet1_1,vae_decoder_16,vae_decoder_32,bert_encoder
help=2,12p
. "$here/common.sh"

/usr/bin/python3 "$here/export.py" --models "$models" --out "$out"
exec node "$here/bench_all.mjs" --models "$models" --dir "$out" --kiln "$kiln" "$@"
