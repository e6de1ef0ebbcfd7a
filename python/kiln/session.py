"""InferenceSession and friends: ONNX Runtime's Python interface over kiln's
C API (include/kiln.h), through ctypes. ctypes releases the GIL during every
library call, so sessions in different threads run at the same time (each
session has its own OpenCL device handle and queue)."""
import ctypes
import os
import tempfile
import threading

import numpy as np

from . import _lib
from .capi import onnxruntime_pybind11_state as _state

_L, LIBRARY_PATH = _lib.load()

PROVIDER = "KilnOpenCLExecutionProvider"

# kiln dtype (ONNX numbering) -> numpy dtype, ONNX Runtime type string
_NP = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64, 9: np.bool_,
       10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}
_ORT_NAME = {1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 8: "string", 9: "bool",
             10: "float16", 11: "double", 12: "uint32", 13: "uint64", 14: "complex64", 15: "complex128", 16: "bfloat16"}
_FROM_NP = {np.dtype(v): k for k, v in _NP.items()}


_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]


def _free(p):
    _libc.free(ctypes.cast(p, ctypes.c_void_p))


def _struct_dict(x):
    return {name: (v.decode("utf-8", "replace") if isinstance(v, bytes) else v) for name, _ in x._fields_ for v in [getattr(x, name)]}


def _raise(rc, err, prefix=""):
    msg = err.msg.decode("utf-8", "replace") or _L.kiln_strerror(rc).decode()
    raise _state.from_status(rc, prefix + msg)


class GraphOptimizationLevel:
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode:
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class SessionOptions:
    """Accepts ONNX Runtime's session options; kiln acts on
    graph_optimization_level (ORT_DISABLE_ALL: no kernel fusion) and ignores
    the rest (threads, logging: the OpenCL device decides)."""

    def __init__(self):
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.enable_profiling = False
        self.enable_mem_pattern = True
        self.enable_cpu_mem_arena = True
        self.optimized_model_filepath = ""
        self._entries = {}

    def add_session_config_entry(self, key, value):
        self._entries[key] = value

    def get_session_config_entry(self, key):
        return self._entries[key]

    def add_free_dimension_override_by_name(self, name, value):
        self._entries["kiln.dim." + name] = int(value)


class RunOptions:
    def __init__(self):
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.run_tag = ""
        self.terminate = False


class NodeArg:
    """An input or output: name, shape (ints; symbolic dimensions as their
    names, unknown ones as None, as ONNX Runtime shows them), type
    ("tensor(float)" and so on)."""

    def __init__(self, name, shape, type):
        self.name = name
        self.shape = shape
        self.type = type

    def __repr__(self):
        return "NodeArg(name='%s', type='%s', shape=%s)" % (self.name, self.type, self.shape)


class ModelMetadata:
    def __init__(self, graph_name=""):
        self.producer_name = ""
        self.graph_name = graph_name
        self.domain = ""
        self.description = ""
        self.graph_description = ""
        self.version = 0
        self.custom_metadata_map = {}


def _node_arg(info):
    shape = None
    if info.rank >= 0:
        shape = []
        for k in range(info.rank):
            if info.dims[k] >= 0:
                shape.append(int(info.dims[k]))
            elif info.dim_names[k]:
                shape.append(info.dim_names[k].decode())
            else:
                shape.append(None)
    return NodeArg(info.name.decode(), shape, "tensor(%s)" % _ORT_NAME.get(info.dtype, "undefined"))


def _to_numpy(t):
    """Copies a kiln_tensor into a new numpy array."""
    dims = tuple(int(t.dims[k]) for k in range(t.rank))
    if t.dtype == 8:  # strings: char *[numel]
        n = int(np.prod(dims)) if dims else 1
        ptrs = ctypes.cast(t.data, ctypes.POINTER(ctypes.c_char_p))
        return np.array([(ptrs[i] or b"").decode("utf-8", "replace") for i in range(n)], dtype=object).reshape(dims)
    if t.dtype not in _NP:
        raise _state.NotImplemented("output '%s': dtype %s has no numpy equivalent" % (t.name.decode() if t.name else "?", _ORT_NAME.get(t.dtype)), -5)
    a = np.empty(dims, dtype=_NP[t.dtype])
    if a.nbytes:
        ctypes.memmove(a.ctypes.data, t.data, a.nbytes)
    return a


def get_available_providers():
    return [PROVIDER, "CPUExecutionProvider"]


def devices():
    """The OpenCL devices kiln sees, as dicts (kiln devices)."""
    err = _lib.Error()
    n = ctypes.c_int(0)
    rc = _L.kiln_device_list(None, 0, ctypes.byref(n), ctypes.byref(err))
    if rc:
        _raise(rc, err)
    infos = (_lib.DeviceInfo * max(n.value, 1))()
    rc = _L.kiln_device_list(infos, n.value, ctypes.byref(n), ctypes.byref(err))
    if rc:
        _raise(rc, err)
    out = []
    for d in infos[:n.value]:
        out.append({"selector": "%d:%d" % (d.platform_index, d.device_index), "name": d.name.decode(), "platform": d.platform.decode(),
                    "vendor": d.vendor.decode(), "compute_units": d.compute_units, "global_mem": d.global_mem, "is_gpu": bool(d.is_gpu)})
    return out


def write_demo_model(which, path, seed=1):
    """Writes kiln's built-in demo model ("cnn" or "transformer") with weights
    drawn from seed to path (as `kiln demo`)."""
    err = _lib.Error()
    rc = _L.kiln_demo_write(which.encode(), os.fspath(path).encode(), seed, ctypes.byref(err))
    if rc:
        _raise(rc, err)


def tune(path, input_feed, db=None, budget=60.0, progress=None, device=None, max_trials=0, strategy="model", families=None):
    """`kiln tune` from Python: measures the kernel parameters of the model at
    input_feed's shapes on the device and stores them in the tuning database
    db (default $KILN_DB, else ~/.cache/kiln/tuning.db; created when missing),
    which later sessions read. budget: seconds for the whole run (0: no
    limit). progress(dict) is called as candidates are measured (instance,
    ninstances, family, shape_key, trial, ntrials, best_ns, default_ns,
    elapsed_s, eta_s, ...). families: comma list of kernel families (None:
    all). Returns one dict per kernel instance."""
    sess = InferenceSession(path, device=device, db=False)
    sess._bind(input_feed)
    err = _lib.Error()
    buf = ctypes.create_string_buffer(4096)
    dbpath = os.fspath(db).encode() if db else _L.kiln_db_default_path(buf, 4096)
    h = ctypes.c_void_p()
    rc = _L.kiln_db_open(dbpath, 2 | 4, ctypes.byref(h), ctypes.byref(err))  # KILN_DB_CREATE | KILN_DB_WRITE
    if rc:
        sess.close()
        _raise(rc, err)
    failure = []

    def cb(p, ctx):
        try:
            progress(_struct_dict(p.contents))
        except Exception as e:  # noqa: BLE001 (raised again after kiln_tune returns)
            failure.append(e)

    fn = _lib.PROGRESS_FN(cb) if progress else _lib.PROGRESS_FN()
    o = _lib.TuneOptions(budget_s=float(budget), max_trials=int(max_trials), strategy=strategy.encode(), probe=1, progress=fn,
                         families=families.encode() if families else None)
    res = ctypes.POINTER(_lib.TuneResult)()
    n = ctypes.c_int(0)
    try:
        rc = _L.kiln_tune(sess._s, h, ctypes.byref(o), ctypes.byref(res), ctypes.byref(n), ctypes.byref(err))
        if rc:
            _raise(rc, err)
        out = [_struct_dict(res[i]) for i in range(n.value)]
        _free(res)
    finally:
        sess.close()
        _L.kiln_db_close(h)
    if failure:
        raise failure[0]
    return out


def get_device():
    """"GPU" when kiln's default device (the first GPU, else the first device) is a GPU, else "CPU"."""
    try:
        return "GPU" if any(d["is_gpu"] for d in devices()) else "CPU"
    except _state.KilnError:
        return "CPU"


class InferenceSession:
    """kiln's InferenceSession: InferenceSession(path_or_bytes, sess_options=None,
    providers=None, provider_options=None, *, device=None, db=None, precision="fp32",
    max_memory=None).

    device: an OpenCL device selector as in `kiln run --device` (default
    $KILN_DEVICE, else the first GPU, else the first device). db: a tuning
    database path (default $KILN_DB, else ~/.cache/kiln/tuning.db when it
    exists, with $KILN_DB_PATH's shared layers); db=False runs without one.
    precision: "fp32", "fp16" or "auto", as `kiln run --precision`.
    max_memory: a device memory budget in bytes, as `kiln run --max-memory`:
    weights stream from host memory when the plan needs more (get_stats()
    reports streamed_bytes and peak_device_bytes).
    The other KILN_* variables (KILN_CACHE_DIR, KILN_KERNEL_DIR, KILN_PROBE,
    KILN_NO_PREDICT, ...) apply as they do to the kiln command.
    Inputs whose symbolic dimensions change between calls are planned once per
    distinct set of input shapes; up to 8 such plans are kept (least recently
    used dropped)."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        self._s = self._m = self._d = self._db = None
        self._tmp = None
        # ONNX Runtime lets threads share a session; a kiln session is not
        # thread-safe, so calls on one session take turns (sessions of their
        # own run at once)
        self._lock = threading.Lock()
        self._providers = [PROVIDER]
        device = kwargs.pop("device", None) or os.environ.get("KILN_DEVICE") or None
        dbpath = kwargs.pop("db", None)
        precision = kwargs.pop("precision", "fp32")
        if precision not in ("fp32", "fp16", "auto"):
            raise ValueError("InferenceSession: precision must be 'fp32', 'fp16' or 'auto', not %r" % (precision,))
        max_memory = kwargs.pop("max_memory", None)
        if max_memory is not None and (not isinstance(max_memory, int) or max_memory <= 0):
            raise ValueError("InferenceSession: max_memory must be a positive number of bytes, not %r" % (max_memory,))
        if kwargs:
            raise TypeError("InferenceSession: unknown option(s) %s" % ", ".join(sorted(kwargs)))
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            # plans for new input shapes re-read the model: keep it in a file for the session's life
            fd, self._tmp = tempfile.mkstemp(suffix=".onnx", prefix="kiln-")
            with os.fdopen(fd, "wb") as f:
                f.write(bytes(path_or_bytes))
            path = self._tmp
        else:
            path = os.fspath(path_or_bytes)
        self._model_path = path
        err = _lib.Error()
        opts = sess_options or SessionOptions()
        binds = [(k[len("kiln.dim."):], v) for k, v in getattr(opts, "_entries", {}).items() if k.startswith("kiln.dim.")]
        lo = None
        if binds:
            arr = (_lib.ShapeBinding * len(binds))()
            for i, (name, val) in enumerate(binds):
                arr[i].name = name.encode()
                arr[i].rank = 1
                arr[i].dims[0] = val
            lo = _lib.LoadOptions(arr, len(binds), 0)
            self._binds = arr
        m = ctypes.c_void_p()
        rc = _L.kiln_model_load(path.encode(), ctypes.byref(lo) if lo else None, ctypes.byref(m), ctypes.byref(err))
        if rc:
            self._cleanup()
            _raise(rc, err)
        self._m = m
        self._inputs = self._infos(_L.kiln_model_num_inputs, _L.kiln_model_input_info)
        self._outputs = self._infos(_L.kiln_model_num_outputs, _L.kiln_model_output_info)
        d = ctypes.c_void_p()
        rc = _L.kiln_device_open(device.encode() if device else None, ctypes.byref(d), ctypes.byref(err))
        if rc:
            self._cleanup()
            _raise(rc, err)
        self._d = d
        # the KILN_* environment as the kiln command applies it (KILN_CACHE_DIR,
        # KILN_KERNEL_DIR, KILN_PROBE, KILN_NO_PREDICT, ...): a bad value is an error
        env = _lib.Options()
        rc = _L.kiln_options_from_env(ctypes.byref(env), ctypes.byref(err))
        if rc == 0:
            rc = _L.kiln_device_set_options(d, ctypes.byref(env), ctypes.byref(err))
        if rc:
            self._cleanup()
            _raise(rc, err)
        s = ctypes.c_void_p()
        rc = _L.kiln_session_create(m, d, ctypes.byref(s), ctypes.byref(err))
        if rc:
            self._cleanup()
            _raise(rc, err)
        self._s = s
        if getattr(opts, "graph_optimization_level", 99) == GraphOptimizationLevel.ORT_DISABLE_ALL:
            _L.kiln_session_set_fusion(s, 0)
        if precision != "fp32":
            rc = _L.kiln_session_set_precision(s, ("fp32", "fp16", "auto").index(precision), ctypes.byref(err))
            if rc:
                self._cleanup()
                _raise(rc, err)
        if max_memory:
            _L.kiln_session_set_max_memory(s, max_memory)
        if dbpath is not False:
            self._open_db(dbpath, err)

    def _open_db(self, dbpath, err):
        buf = ctypes.create_string_buffer(4096)
        path = os.fspath(dbpath).encode() if dbpath else _L.kiln_db_default_path(buf, 4096)
        layers = os.environ.get("KILN_DB_PATH")
        db = ctypes.c_void_p()
        rc = _L.kiln_db_open_layered(path, 1 if dbpath else 0, layers.encode() if layers else None, ctypes.byref(db), ctypes.byref(err))
        if rc:
            self._cleanup()
            _raise(rc, err)
        if db.value:
            self._db = db
            rc = _L.kiln_session_set_db(self._s, db, ctypes.byref(err))
            if rc:
                self._cleanup()
                _raise(rc, err)

    def _infos(self, count, get):
        out = []
        for i in range(count(self._m)):
            info = _lib.ValueInfo()
            get(self._m, i, ctypes.byref(info))
            out.append(_node_arg(info))
        return out

    def _cleanup(self):
        if self._s:
            _L.kiln_session_free(self._s)
        if self._db:
            _L.kiln_db_close(self._db)
        if self._m:
            _L.kiln_model_free(self._m)
        if self._d:
            _L.kiln_device_close(self._d)
        self._s = self._m = self._d = self._db = None
        if self._tmp:
            try:
                os.unlink(self._tmp)
            except OSError:
                pass
            self._tmp = None

    def close(self):
        """Frees the session's device memory now (also done when it is garbage collected)."""
        with self._lock:
            self._cleanup()

    def __del__(self):
        self._cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- ONNX Runtime's interface ----
    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_overridable_initializers(self):
        return []

    def get_providers(self):
        return list(self._providers)

    def get_provider_options(self):
        return {PROVIDER: {}}

    def get_session_options(self):
        return SessionOptions()

    def get_modelmeta(self):
        return ModelMetadata()

    def set_providers(self, providers=None, provider_options=None):
        pass

    def _bind(self, input_feed):
        if self._s is None:
            raise _state.Fail("the session is closed", -12)
        names = [a.name for a in self._inputs]
        missing = [n for n in names if n not in input_feed]
        keep = []
        err = _lib.Error()
        for name, value in input_feed.items():
            a = np.asarray(value)
            t = _lib.Tensor()
            if a.dtype == object or a.dtype.kind in "US":
                flat = [str(v).encode() for v in a.reshape(-1)]
                ptrs = (ctypes.c_char_p * max(len(flat), 1))(*flat)
                keep.append(ptrs)
                t.dtype, t.data = 8, ctypes.cast(ptrs, ctypes.c_void_p)
            else:
                dt = _FROM_NP.get(a.dtype.newbyteorder("=") if a.dtype.byteorder not in "=|" else a.dtype)
                if dt is None:
                    raise _state.InvalidArgument("input '%s': numpy dtype %s is not an ONNX tensor type" % (name, a.dtype), -6)
                a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("="))
                keep.append(a)
                t.dtype, t.data = dt, a.ctypes.data
            if a.ndim > _lib.MAX_RANK:
                raise _state.InvalidArgument("input '%s': rank %d is more than kiln's %d" % (name, a.ndim, _lib.MAX_RANK), -6)
            t.rank = a.ndim
            for k, n in enumerate(a.shape):
                t.dims[k] = n
            rc = _L.kiln_session_set_input(self._s, str(name).encode(), ctypes.byref(t), ctypes.byref(err))
            if rc:
                _raise(rc, err)
        if missing:
            raise ValueError("Required inputs (%s) are missing from input feed (%s)." % (missing, list(input_feed)))

    def _select(self, output_names):
        names = [o.name for o in self._outputs]
        if not output_names:
            return list(range(len(names)))
        idx = []
        for n in output_names:
            if n not in names:
                raise _state.InvalidArgument("Invalid output name: %s (outputs: %s)" % (n, ", ".join(names)), -7)
            idx.append(names.index(n))
        return idx

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model on input_feed ({name: array}); returns the outputs
        named in output_names (None: all) as numpy arrays, in that order."""
        idx = self._select(output_names)
        with self._lock:
            self._bind(input_feed)
            err = _lib.Error()
            rc = _L.kiln_session_run(self._s, ctypes.byref(err))  # the GIL is released
            if rc:
                _raise(rc, err)
            return [_to_numpy(_L.kiln_session_output(self._s, i).contents) for i in idx]

    # ---- beyond ONNX Runtime ----
    def run_reference(self, output_names, input_feed):
        """Same as run() with kiln's CPU reference implementation (slow; for checks)."""
        idx = self._select(output_names)
        err = _lib.Error()
        outs = ctypes.POINTER(ctypes.POINTER(_lib.Tensor))()
        n = ctypes.c_int(0)
        with self._lock:
            self._bind(input_feed)
            rc = _L.kiln_session_run_reference(self._s, ctypes.byref(outs), ctypes.byref(n), ctypes.byref(err))
        if rc:
            _raise(rc, err)
        try:
            res = [_to_numpy(outs[i].contents) for i in range(n.value)]
        finally:
            for i in range(n.value):
                _L.kiln_tensor_free(outs[i])
            _free(outs)
        return [res[i] for i in idx]

    def plan(self, input_feed=None, measure=False):
        """The plan for input_feed's shapes (the inputs bound last when None)
        as `kiln plan` shows it: one dict per kernel (node, ops covered,
        kernel family, parameters and where they came from, predicted and,
        with measure, measured time in ns; -1 when unknown)."""
        err = _lib.Error()
        out = ctypes.POINTER(_lib.PlanKernel)()
        n = ctypes.c_int(0)
        with self._lock:
            if input_feed is not None:
                self._bind(input_feed)
            rc = _L.kiln_session_plan_info(self._s, 1 if measure else 0, ctypes.byref(out), ctypes.byref(n), ctypes.byref(err))
        if rc:
            _raise(rc, err)
        try:
            return [_struct_dict(out[i]) for i in range(n.value)]
        finally:
            _free(out)

    def profile(self, input_feed):
        """Runs input_feed once with profiling events; returns one dict per
        node that launched kernels (node, op, start_us from the run's first
        kernel, span_us, bytes its kernels must move at least once, compute:
        1 for conv/gemm/matmul/attention kernels), in execution order."""
        out = ctypes.POINTER(_lib.NodeTime)()
        n = ctypes.c_int(0)
        with self._lock:
            self._bind(input_feed)
            err = _lib.Error()
            _L.kiln_session_set_profiling(self._s, 1)
            rc = _L.kiln_session_run(self._s, ctypes.byref(err))
            _L.kiln_session_set_profiling(self._s, 0)
            if rc:
                _raise(rc, err)
            if _L.kiln_session_node_times(self._s, ctypes.byref(out), ctypes.byref(n)):
                return []
        try:
            return [_struct_dict(out[i]) for i in range(n.value)]
        finally:
            _free(out)

    def get_stats(self):
        """Figures of the last run (kiln_run_stats) as a dict; plans_built counts
        the plans this session made (one per new set of input shapes)."""
        st = _lib.RunStats()
        _L.kiln_session_get_stats(self._s, ctypes.byref(st))
        return {name: getattr(st, name) for name, _ in _lib.RunStats._fields_}

    def get_device_info(self):
        di = _L.kiln_device_get_info(self._d).contents
        return {"name": di.name.decode(), "platform": di.platform.decode(), "is_gpu": bool(di.is_gpu)}
