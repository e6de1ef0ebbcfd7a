#!/usr/bin/env python3
"""torch_side.py: the PyTorch side of bench/gpu/run.sh, on a machine with a CUDA GPU.

  torch_side.py export NAME OUTDIR     exports bench/models/export.py's model NAME (same seed, so
                                       the same weights) to OUTDIR/NAME.onnx, with its seeded input
                                       (NAME.in.npy) and PyTorch's CPU output (NAME.ref.npy)
  torch_side.py time NAME [N]          one JSON line: PyTorch CUDA latency of NAME at batch 1, median
                                       and min of N runs (default 50), fp32 with TF32 off and
                                       cudnn.benchmark off, then on, then TF32 allowed
  torch_side.py cmp A.npy B.npy        one JSON line: max abs and max relative error of A against B

Newer PyTorch exports with the TorchScript exporter (dynamo=False) when it has one, else with
dynamo. Errors exit 1 with the message on stderr.
"""
import json, os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))


def export(name, out):
    import inspect
    import numpy as np, torch, export as ex
    _, _, o = ex.spec(name)
    model = ex.build_model(name, 0, True)
    x = ex.example_input(name, 0)
    path = os.path.join(out, name + ".onnx")
    how = "torchscript"
    t0 = time.time()
    kw = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    with torch.no_grad():
        try:
            torch.onnx.export(model, x, path, opset_version=o["opset"] or 13, input_names=[o["input"]],
                              output_names=[o["output"]], do_constant_folding=True, **kw)
        except Exception as e:
            if not kw:
                raise
            print("TorchScript export failed (%r); exporting with dynamo" % (e,), file=sys.stderr)
            how = "dynamo"
            torch.onnx.export(model, (x,), path, opset_version=max(o["opset"] or 13, 18),
                              input_names=[o["input"]], output_names=[o["output"]], dynamo=True,
                              external_data=False)
        ref = model(x).numpy()
    np.save(os.path.join(out, name + ".in.npy"), x.numpy())
    np.save(os.path.join(out, name + ".ref.npy"), ref)
    print(json.dumps({"model": name, "export": how, "s": round(time.time() - t0, 1),
                      "input": o["input"], "output": o["output"]}))


def timeit(model, x, n):
    import torch
    with torch.no_grad():
        for _ in range(5):
            model(x)
        torch.cuda.synchronize()
        ts = []
        for _ in range(n):
            t0 = time.perf_counter()
            model(x)
            torch.cuda.synchronize()
            ts.append((time.perf_counter() - t0) * 1e3)
    ts.sort()
    return {"median": round(ts[len(ts) // 2], 3), "min": round(ts[0], 3)}


def time_cuda(name, n):
    import torch, export as ex
    if not torch.cuda.is_available():
        print("torch_side.py: PyTorch %s sees no CUDA device" % torch.__version__, file=sys.stderr)
        sys.exit(1)
    model = ex.build_model(name, 0, True).cuda()
    x = ex.example_input(name, 0).cuda()
    r = {"model": name, "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    r["cuda_fp32"] = timeit(model, x, n)
    torch.backends.cudnn.benchmark = True
    r["cuda_fp32_benchmark"] = timeit(model, x, n)
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = True
    r["cuda_tf32_benchmark"] = timeit(model, x, n)
    print(json.dumps(r))


def cmp(a, b):
    import numpy as np
    x = np.load(a).astype(np.float64)
    y = np.load(b).astype(np.float64)
    if x.shape != y.shape:
        print(json.dumps({"shape_mismatch": [list(x.shape), list(y.shape)]}))
        return 1
    d = np.abs(x - y).max()
    print(json.dumps({"max_abs": float(d), "max_rel": float(d / max(np.abs(y).max(), 1e-30))}))
    return 0


if __name__ == "__main__":
    c = sys.argv[1] if len(sys.argv) > 1 else ""
    if c not in ("export", "time", "cmp") or len(sys.argv) < (4 if c != "time" else 3):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    if c == "export":
        export(sys.argv[2], sys.argv[3])
    elif c == "time":
        time_cuda(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 50)
    elif c == "cmp":
        sys.exit(cmp(sys.argv[2], sys.argv[3]))
