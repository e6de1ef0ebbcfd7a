"""kiln: ONNX models on OpenCL devices with per-device tuned kernels, behind
ONNX Runtime's Python interface: code written for onnxruntime runs with
`import kiln as ort`.

    import kiln as ort
    sess = ort.InferenceSession("model.onnx")
    y, = sess.run(None, {sess.get_inputs()[0].name: x})

The package is a ctypes layer over libkiln.so: found beside the package, in
the prefix it was installed to, in the source tree's build/ directory, or at
$KILN_LIBRARY."""
from .capi import onnxruntime_pybind11_state
from .capi.onnxruntime_pybind11_state import (EPFail, Fail, InvalidArgument, InvalidGraph, InvalidProtobuf, KilnError,  # noqa: F401
                                              NoSuchFile, NotImplemented, RuntimeException)
from .session import (LIBRARY_PATH, PROVIDER, ExecutionMode, GraphOptimizationLevel, InferenceSession, ModelMetadata,  # noqa: F401
                      NodeArg, RunOptions, SessionOptions, devices, get_available_providers, get_device, tune, write_demo_model)

__version__ = "0.1.0"


def get_version_string():
    return __version__
