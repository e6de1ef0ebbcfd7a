#!/usr/bin/python3
"""export.py: exports torchvision models with random weights to ONNX for the
kiln vs ONNX Runtime comparison (bench/models/run.sh).

Weights are random (weights=None) with a fixed torch seed, so no download is
needed and every run writes the same model. BatchNorm running statistics are
then calibrated on a few random batches (so activations stay O(1) through the
network: with the untouched init, mobilenet_v2's logits are ~1e-9), and models
are exported in eval mode (running statistics, no Dropout) with a static input
shape.

Besides torchvision models, two hand-written ones: the Stable Diffusion 1.x
VAE decoder layout (vae_decoder_16 / vae_decoder_32: latent 16x16 / 32x32,
image 128x128 / 256x256) and a 4-layer BERT-base-like encoder (bert_encoder:
int64 token ids [1, 128]); both exported with opset 17.

Usage: export.py [--models resnet18,mobilenet_v2|bench] [--out DIR] [--opset N] [--list]
To add a model, add an entry to MODELS: name -> (builder, input shape[, options]).
"""
import argparse
import os
import sys


def _tv(name):
    """A builder for torchvision.models.<name> with random weights."""
    def build():
        import torchvision
        return getattr(torchvision.models, name)(weights=None)
    return build


# ---- hand-written models ------------------------------------------------

def _nn():
    import torch
    return torch, torch.nn, torch.nn.functional


def _vae_decoder_cls():
    """The Stable Diffusion 1.x VAE decoder layout (diffusers AutoencoderKL,
    block_out_channels 128, 256, 512, 512; layers_per_block 2) as a plain
    torch module: post_quant_conv, conv_in, mid block (ResnetBlock, one
    single-head self-attention over H*W tokens, ResnetBlock), 4 up blocks of 3
    ResnetBlocks (512, 512, 256, 128 channels) with nearest 2x upsampling and a
    3x3 conv after the first three, then GroupNorm + SiLU + conv_out. GroupNorm
    is GroupNorm(32, eps 1e-6) throughout."""
    torch, nn, F = _nn()

    def gn(c):
        return nn.GroupNorm(32, c, eps=1e-6)

    class ResnetBlock(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.norm1, self.conv1 = gn(cin), nn.Conv2d(cin, cout, 3, padding=1)
            self.norm2, self.conv2 = gn(cout), nn.Conv2d(cout, cout, 3, padding=1)
            self.shortcut = nn.Conv2d(cin, cout, 1) if cin != cout else None

        def forward(self, x):
            h = self.conv1(F.silu(self.norm1(x)))
            h = self.conv2(F.silu(self.norm2(h)))
            return (self.shortcut(x) if self.shortcut is not None else x) + h

    class Attention(nn.Module):
        """Single-head self-attention over the H*W positions (diffusers'
        Attention with heads=1 and a residual connection)."""
        def __init__(self, c):
            super().__init__()
            self.norm = gn(c)
            self.q, self.k, self.v, self.proj = (nn.Linear(c, c) for _ in range(4))
            self.scale = c ** -0.5

        def forward(self, x):
            b, c, h, w = x.shape
            t = self.norm(x).reshape(b, c, h * w).transpose(1, 2)        # [b, hw, c]
            q, k, v = self.q(t), self.k(t), self.v(t)
            a = torch.softmax(torch.matmul(q, k.transpose(1, 2)) * self.scale, dim=-1)
            o = self.proj(torch.matmul(a, v))
            return x + o.transpose(1, 2).reshape(b, c, h, w)

    class Upsample(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv = nn.Conv2d(c, c, 3, padding=1)

        def forward(self, x):
            return self.conv(F.interpolate(x, scale_factor=2.0, mode="nearest"))

    class VAEDecoder(nn.Module):
        def __init__(self, latent=4, channels=(512, 512, 256, 128), layers=3):
            super().__init__()
            self.post_quant_conv = nn.Conv2d(latent, latent, 1)
            self.conv_in = nn.Conv2d(latent, channels[0], 3, padding=1)
            c0 = channels[0]
            self.mid = nn.Sequential(ResnetBlock(c0, c0), Attention(c0), ResnetBlock(c0, c0))
            ups, prev = [], c0
            for i, c in enumerate(channels):
                blocks = [ResnetBlock(prev if j == 0 else c, c) for j in range(layers)]
                if i < len(channels) - 1:
                    blocks.append(Upsample(c))
                ups.append(nn.Sequential(*blocks))
                prev = c
            self.up = nn.Sequential(*ups)
            self.norm_out = gn(prev)
            self.conv_out = nn.Conv2d(prev, 3, 3, padding=1)

        def forward(self, z):
            h = self.conv_in(self.post_quant_conv(z))
            h = self.up(self.mid(h))
            return self.conv_out(F.silu(self.norm_out(h)))

    return VAEDecoder


def _vae_decoder():
    return _vae_decoder_cls()()


def _bert_encoder():
    """A BERT-base-like encoder, 4 layers: token (vocab 30522) + learned
    position embeddings, embedding LayerNorm, then post-LN layers of 12-head
    self-attention (d 768) and a GELU FFN (3072), LayerNorm eps 1e-12.
    Input: int64 token ids [1, 128]; output: hidden states [1, 128, 768]."""
    torch, nn, F = _nn()

    class Layer(nn.Module):
        def __init__(self, d, heads, ffn):
            super().__init__()
            self.heads = heads
            self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
            self.ln1 = nn.LayerNorm(d, eps=1e-12)
            self.ff1, self.ff2 = nn.Linear(d, ffn), nn.Linear(ffn, d)
            self.ln2 = nn.LayerNorm(d, eps=1e-12)

        def forward(self, x):
            b, s, d = x.shape
            hd = d // self.heads

            def split(t):
                return t.reshape(b, s, self.heads, hd).transpose(1, 2)   # [b, h, s, hd]
            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            a = torch.softmax(torch.matmul(q, k.transpose(2, 3)) / (hd ** 0.5), dim=-1)
            ctx = torch.matmul(a, v).transpose(1, 2).reshape(b, s, d)
            x = self.ln1(x + self.o(ctx))
            return self.ln2(x + self.ff2(F.gelu(self.ff1(x))))

    class Encoder(nn.Module):
        def __init__(self, vocab=30522, d=768, heads=12, ffn=3072, layers=4, max_pos=512):
            super().__init__()
            self.tok = nn.Embedding(vocab, d)
            self.pos = nn.Embedding(max_pos, d)
            self.ln = nn.LayerNorm(d, eps=1e-12)
            self.layers = nn.ModuleList(Layer(d, heads, ffn) for _ in range(layers))
            for m in self.modules():   # BERT's initializer: N(0, 0.02)
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(m.weight, std=0.02)
                    if getattr(m, "bias", None) is not None:
                        nn.init.zeros_(m.bias)

        def forward(self, ids):
            pos = torch.arange(ids.shape[1], dtype=torch.int64).unsqueeze(0)
            x = self.ln(self.tok(ids) + self.pos(pos))
            for layer in self.layers:
                x = layer(x)
            return x

    return Encoder()


# name -> (builder returning an nn.Module, input shape[, options]). Options:
# "dtype" ("float32" default, or "int64": token ids drawn from [0, "vocab")),
# "opset" (overrides --opset; GroupNorm needs 17 to export as
# Reshape + InstanceNormalization + Reshape + Mul + Add), "input"/"output"
# (tensor names; default "input"/"output").
MODELS = {
    "resnet18": (_tv("resnet18"), (1, 3, 224, 224)),
    "mobilenet_v2": (_tv("mobilenet_v2"), (1, 3, 224, 224)),
    "resnet50": (_tv("resnet50"), (1, 3, 224, 224)),
    "squeezenet1_1": (_tv("squeezenet1_1"), (1, 3, 224, 224)),
    "shufflenet_v2_x1_0": (_tv("shufflenet_v2_x1_0"), (1, 3, 224, 224)),
    "efficientnet_b0": (_tv("efficientnet_b0"), (1, 3, 224, 224)),
    "vae_decoder_16": (_vae_decoder, (1, 4, 16, 16), {"opset": 17, "input": "latent", "output": "image"}),
    "vae_decoder_32": (_vae_decoder, (1, 4, 32, 32), {"opset": 17, "input": "latent", "output": "image"}),
    "bert_encoder": (_bert_encoder, (1, 128), {"opset": 17, "dtype": "int64", "vocab": 30522,
                                                 "input": "input_ids", "output": "hidden"}),
}

# The six models of bench_all.sh.
BENCH = "resnet18,mobilenet_v2,squeezenet1_1,vae_decoder_16,vae_decoder_32,bert_encoder"


def spec(name):
    """(builder, shape, options) of a model, options filled with defaults."""
    entry = MODELS[name]
    o = {"dtype": "float32", "opset": None, "input": "input", "output": "output"}
    if len(entry) > 2:
        o.update(entry[2])
    return entry[0], entry[1], o


def build_model(name, seed=0, calibrate=True):
    """The model `name` in eval mode with the weights export() writes."""
    import torch
    build, shape, o = spec(name)
    torch.manual_seed(seed)
    model = build()
    if calibrate and o["dtype"] == "float32":
        calibrate_bn(model, shape)
    model.eval()
    return model


def example_input(name, seed=0):
    """A seeded example input (torch tensor) of the model's input shape."""
    import torch
    _, shape, o = spec(name)
    g = torch.Generator().manual_seed(seed + 1)
    if o["dtype"] == "int64":
        return torch.randint(0, o.get("vocab", 1000), shape, generator=g, dtype=torch.int64)
    return torch.randn(*shape, generator=g)

DEFAULT = "resnet18,mobilenet_v2"


def calibrate_bn(model, shape, batches=4, batch=8):
    """Sets BatchNorm running statistics to the cumulative batch statistics of
    random N(0,1) inputs."""
    import torch
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # cumulative average
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(batch, *shape[1:]))


def export(name, out_dir, opset, seed, calibrate=True):
    import torch
    _, _, o = spec(name)
    model = build_model(name, seed, calibrate)
    x = example_input(name, seed)
    path = os.path.join(out_dir, name + ".onnx")
    tmp = path + ".tmp"
    with torch.no_grad():
        torch.onnx.export(model, x, tmp, opset_version=o["opset"] or opset, input_names=[o["input"]],
                          output_names=[o["output"]], do_constant_folding=True)
    os.replace(tmp, path)  # never leave a half-written model behind
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=DEFAULT, help="comma-separated names, or 'bench' for the six of bench_all.sh (default %(default)s)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out"),
                    help="output directory (default bench/models/out)")
    ap.add_argument("--opset", type=int, default=13)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--force", action="store_true", help="re-export models that already exist")
    ap.add_argument("--no-calibrate", action="store_true", help="keep the initial BatchNorm statistics")
    ap.add_argument("--list", action="store_true", help="list the known models and exit")
    a = ap.parse_args()
    if a.list:
        for n in MODELS:
            _, shape, o = spec(n)
            print(n, "x".join(map(str, shape)), o["dtype"], "opset %s" % (o["opset"] or a.opset))
        return 0
    names = [n for n in (BENCH if a.models == "bench" else a.models).split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        print("export.py: unknown model(s): %s (known: %s)" % (", ".join(unknown), ", ".join(MODELS)), file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    for n in names:
        path = os.path.join(a.out, n + ".onnx")
        if os.path.exists(path) and not a.force:
            print("%s: exists, kept (--force to re-export)" % path)
            continue
        print("%s: exported" % export(n, a.out, a.opset, a.seed, not a.no_calibrate))
    return 0


if __name__ == "__main__":
    sys.exit(main())
