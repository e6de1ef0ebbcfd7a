"""ort_script.py MODEL OUTDIR FEED.npz...: a batch script as someone using
ONNX Runtime writes it: one session, one run per .npz file of named inputs,
the outputs saved as OUTDIR/<k>_<output>.npy. The kiln tests run it with only
the import line changed to `import kiln as ort`."""
import os
import sys

import numpy as np
import onnxruntime as ort


def main():
    model, outdir, feeds = sys.argv[1], sys.argv[2], sys.argv[3:]
    print("onnxruntime", ort.get_version_string(), "providers", ort.get_available_providers())
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(model, sess_options=so, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    print("session providers", sess.get_providers())
    for i in sess.get_inputs():
        print("input", i.name, i.type, i.shape)
    for o in sess.get_outputs():
        print("output", o.name, o.type, o.shape)
    output_names = [o.name for o in sess.get_outputs()]
    os.makedirs(outdir, exist_ok=True)
    for k, path in enumerate(feeds):
        with np.load(path) as z:
            feed = {i.name: z[i.name] for i in sess.get_inputs()}
        try:
            results = sess.run(output_names, feed, run_options=ort.RunOptions())
        except ort.capi.onnxruntime_pybind11_state.InvalidArgument as e:
            print("bad input in", path, ":", e)
            return 2
        for name, value in zip(output_names, results):
            assert isinstance(value, np.ndarray)
            np.save(os.path.join(outdir, "%d_%s.npy" % (k, name)), value)
            print("run %d: %s %s %s" % (k, name, value.dtype, value.shape))
    return 0


if __name__ == "__main__":
    sys.exit(main())
