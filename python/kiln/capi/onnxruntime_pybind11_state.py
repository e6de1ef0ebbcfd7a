"""Exception classes under the names ONNX Runtime raises
(onnxruntime.capi.onnxruntime_pybind11_state), so that `except` clauses written
for it catch kiln's errors. Every one derives from KilnError (a RuntimeError)
and carries the kiln status code in .status; the message is the one the kiln
CLI prints."""


class KilnError(RuntimeError):
    def __init__(self, msg, status=-12):
        super().__init__(msg)
        self.status = status


class Fail(KilnError):
    """Anything not covered by a more specific class (limits, database)."""


class InvalidArgument(KilnError):
    """Wrong input name, dtype or shape; bad options."""


class NoSuchFile(KilnError):
    """The model file does not exist or cannot be read."""


class NoModel(KilnError):
    pass


class EngineError(KilnError):
    pass


class RuntimeException(KilnError):
    """Out of memory, internal errors."""


class InvalidProtobuf(KilnError):
    """The model file is not a well-formed ONNX model."""


class ModelLoaded(KilnError):
    pass


class NotImplemented(KilnError):  # noqa: A001 (ONNX Runtime's name)
    """The model uses an op (or a form of one) kiln cannot run."""


class InvalidGraph(KilnError):
    """The graph is inconsistent (e.g. a shape that cannot be inferred)."""


class EPFail(KilnError):
    """The OpenCL device failed or none is present."""


# kiln status (include/kiln.h) -> class
BY_STATUS = {
    -1: InvalidArgument,   # KILN_EINVAL
    -2: RuntimeException,  # KILN_ENOMEM
    -3: NoSuchFile,        # KILN_EIO
    -4: InvalidProtobuf,   # KILN_EPARSE
    -5: NotImplemented,    # KILN_EUNSUPPORTED
    -6: InvalidArgument,   # KILN_ESHAPE
    -7: InvalidArgument,   # KILN_ENOTFOUND
    -8: EPFail,            # KILN_ENODEVICE
    -9: EPFail,            # KILN_ECL
    -10: Fail,             # KILN_ELIMIT
    -11: Fail,             # KILN_EDB
    -12: RuntimeException, # KILN_EINTERNAL
}


def from_status(status, msg):
    return BY_STATUS.get(status, Fail)(msg, status)
