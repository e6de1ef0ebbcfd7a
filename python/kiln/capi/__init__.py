"""Mirrors onnxruntime.capi: the exception classes live in
kiln.capi.onnxruntime_pybind11_state, as ONNX Runtime's do."""
