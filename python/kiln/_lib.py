"""ctypes bindings of libkiln.so (include/kiln.h): the structures and
functions the Python package uses, and where the library is found."""
import ctypes
import ctypes.util
import glob
import os

MAX_RANK = 8


class Error(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("msg", ctypes.c_char * 1024)]


class Tensor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("dims", ctypes.c_int64 * MAX_RANK), ("data", ctypes.c_void_p)]


class ValueInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("dims", ctypes.c_int64 * MAX_RANK), ("dim_names", ctypes.c_char_p * MAX_RANK), ("optional", ctypes.c_int)]


class ShapeBinding(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("rank", ctypes.c_int), ("dims", ctypes.c_int64 * MAX_RANK)]


class LoadOptions(ctypes.Structure):
    _fields_ = [("shapes", ctypes.POINTER(ShapeBinding)), ("nshapes", ctypes.c_int), ("max_model_bytes", ctypes.c_uint64)]


class Options(ctypes.Structure):
    _fields_ = [("device", ctypes.c_char_p), ("db", ctypes.c_char_p), ("db_path", ctypes.c_char_p), ("cache_dir", ctypes.c_char_p),
                ("kernel_dir", ctypes.c_char_p), ("no_probe", ctypes.c_int), ("gemm_kernels", ctypes.c_uint),
                ("attention_fuse", ctypes.c_int), ("no_predict", ctypes.c_int), ("no_blocked", ctypes.c_int), ("no_replay", ctypes.c_int),
                ("max_model_bytes", ctypes.c_uint64)]


class RunStats(ctypes.Structure):
    _fields_ = [("last_ms", ctypes.c_double), ("kernels_launched", ctypes.c_int), ("programs_compiled", ctypes.c_int),
                ("compile_ms", ctypes.c_double), ("nodes_folded", ctypes.c_int), ("device_bytes", ctypes.c_uint64),
                ("intermediate_bytes", ctypes.c_uint64), ("pool_bytes", ctypes.c_uint64), ("plans_built", ctypes.c_int),
                ("codegen_ms", ctypes.c_double), ("streamed_bytes", ctypes.c_uint64), ("peak_device_bytes", ctypes.c_uint64),
                ("blocked_values", ctypes.c_int)]


class DeviceInfo(ctypes.Structure):
    _fields_ = [("platform_index", ctypes.c_int), ("device_index", ctypes.c_int), ("platform", ctypes.c_char * 128),
                ("vendor", ctypes.c_char * 128), ("name", ctypes.c_char * 128), ("driver", ctypes.c_char * 64),
                ("version", ctypes.c_char * 128), ("compute_units", ctypes.c_int), ("max_clock_mhz", ctypes.c_int),
                ("global_mem", ctypes.c_uint64), ("local_mem", ctypes.c_uint64), ("max_alloc", ctypes.c_uint64),
                ("max_work_group", ctypes.c_size_t), ("is_gpu", ctypes.c_int), ("native_vec_float", ctypes.c_int)]


class NodeTime(ctypes.Structure):
    _fields_ = [("node", ctypes.c_char * 128), ("op", ctypes.c_char * 32), ("start_us", ctypes.c_double), ("span_us", ctypes.c_double),
                ("bytes", ctypes.c_double), ("compute", ctypes.c_int)]


class PlanKernel(ctypes.Structure):
    _fields_ = [("node", ctypes.c_char * 128), ("ops", ctypes.c_char * 256), ("family", ctypes.c_char * 32),
                ("params", ctypes.c_char * 256), ("origin", ctypes.c_char * 16), ("nodes_covered", ctypes.c_int),
                ("predicted_ns", ctypes.c_double), ("measured_ns", ctypes.c_double), ("precision", ctypes.c_char * 8),
                ("precision_why", ctypes.c_char * 96)]


class TuneProgress(ctypes.Structure):
    _fields_ = [("instance", ctypes.c_int), ("ninstances", ctypes.c_int), ("family", ctypes.c_char_p), ("shape_key", ctypes.c_char_p),
                ("trial", ctypes.c_int), ("ntrials", ctypes.c_int), ("best_ns", ctypes.c_double), ("default_ns", ctypes.c_double),
                ("elapsed_s", ctypes.c_double), ("eta_s", ctypes.c_double), ("share", ctypes.c_double), ("covered", ctypes.c_double),
                ("extra", ctypes.c_int)]


class TuneResult(ctypes.Structure):
    _fields_ = [("family", ctypes.c_char * 32), ("shape_key", ctypes.c_char * 192), ("params", ctypes.c_char * 256),
                ("dtype", ctypes.c_char * 16), ("trials", ctypes.c_int), ("rejected", ctypes.c_int), ("skipped", ctypes.c_int),
                ("tuned", ctypes.c_int), ("candidates", ctypes.c_int), ("refreshed", ctypes.c_int), ("default_ns", ctypes.c_double),
                ("best_ns", ctypes.c_double), ("cmp_space", ctypes.c_int), ("cmp_measured", ctypes.c_int),
                ("cmp_cold_ns", ctypes.c_double), ("cmp_warm_ns", ctypes.c_double), ("cmp_pick_ns", ctypes.c_double),
                ("cmp_best_ns", ctypes.c_double), ("cmp_params", ctypes.c_char * 256), ("share", ctypes.c_double),
                ("noisy", ctypes.c_int), ("extra", ctypes.c_int)]


PROGRESS_FN = ctypes.CFUNCTYPE(None, ctypes.POINTER(TuneProgress), ctypes.c_void_p)


class TuneOptions(ctypes.Structure):
    _fields_ = [("budget_s", ctypes.c_double), ("stop", ctypes.POINTER(ctypes.c_int)), ("max_trials", ctypes.c_int),
                ("strategy", ctypes.c_char_p), ("probe", ctypes.c_int), ("seed", ctypes.c_uint64), ("families", ctypes.c_char_p),
                ("max_gflop", ctypes.c_double), ("compare", ctypes.c_int), ("progress", PROGRESS_FN), ("ctx", ctypes.c_void_p),
                ("fusion_close", ctypes.c_double), ("evict_mb", ctypes.c_double)]


# The C names of the mirrored structs: load() compares each one's size with
# the library's (kiln_struct_size), so that a field added in include/kiln.h
# and not here fails at import instead of corrupting memory.
_C_NAMES = {Error: "kiln_error", Tensor: "kiln_tensor", ValueInfo: "kiln_value_info", ShapeBinding: "kiln_shape_binding",
            LoadOptions: "kiln_load_options", RunStats: "kiln_run_stats", DeviceInfo: "kiln_device_info",
            NodeTime: "kiln_node_time", PlanKernel: "kiln_plan_kernel", TuneProgress: "kiln_tune_progress",
            TuneResult: "kiln_tune_result", TuneOptions: "kiln_tune_options", Options: "kiln_options"}

_P = ctypes.c_void_p
_E = ctypes.POINTER(Error)
# name: (restype, argtypes)
_SIGS = {
    "kiln_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "kiln_device_list": (ctypes.c_int, [ctypes.POINTER(DeviceInfo), ctypes.c_int, ctypes.POINTER(ctypes.c_int), _E]),
    "kiln_device_open": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(_P), _E]),
    "kiln_options_from_env": (ctypes.c_int, [ctypes.POINTER(Options), _E]),
    "kiln_device_set_options": (ctypes.c_int, [_P, ctypes.POINTER(Options), _E]),
    "kiln_device_close": (None, [_P]),
    "kiln_device_get_info": (ctypes.POINTER(DeviceInfo), [_P]),
    "kiln_model_load": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(LoadOptions), ctypes.POINTER(_P), _E]),
    "kiln_model_free": (None, [_P]),
    "kiln_model_num_inputs": (ctypes.c_int, [_P]),
    "kiln_model_num_outputs": (ctypes.c_int, [_P]),
    "kiln_model_input_info": (ctypes.c_int, [_P, ctypes.c_int, ctypes.POINTER(ValueInfo)]),
    "kiln_model_output_info": (ctypes.c_int, [_P, ctypes.c_int, ctypes.POINTER(ValueInfo)]),
    "kiln_session_create": (ctypes.c_int, [_P, _P, ctypes.POINTER(_P), _E]),
    "kiln_session_free": (None, [_P]),
    "kiln_session_set_input": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.POINTER(Tensor), _E]),
    "kiln_session_run": (ctypes.c_int, [_P, _E]),
    "kiln_session_output": (ctypes.POINTER(Tensor), [_P, ctypes.c_int]),
    "kiln_session_get_stats": (None, [_P, ctypes.POINTER(RunStats)]),
    "kiln_session_run_reference": (ctypes.c_int, [_P, ctypes.POINTER(ctypes.POINTER(ctypes.POINTER(Tensor))),
                                                  ctypes.POINTER(ctypes.c_int), _E]),
    "kiln_session_set_fusion": (None, [_P, ctypes.c_int]),
    "kiln_session_set_precision": (ctypes.c_int, [_P, ctypes.c_int, _E]),
    "kiln_session_set_max_memory": (ctypes.c_int, [_P, ctypes.c_uint64]),
    "kiln_session_set_db": (ctypes.c_int, [_P, _P, _E]),
    "kiln_tensor_free": (None, [ctypes.POINTER(Tensor)]),
    "kiln_db_open_layered": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(_P), _E]),
    "kiln_db_default_path": (ctypes.c_char_p, [ctypes.c_char_p, ctypes.c_size_t]),
    "kiln_db_close": (None, [_P]),
    "kiln_db_open": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(_P), _E]),
    "kiln_session_set_profiling": (None, [_P, ctypes.c_int]),
    "kiln_session_node_times": (ctypes.c_int, [_P, ctypes.POINTER(ctypes.POINTER(NodeTime)), ctypes.POINTER(ctypes.c_int)]),
    "kiln_session_plan_info": (ctypes.c_int, [_P, ctypes.c_int, ctypes.POINTER(ctypes.POINTER(PlanKernel)), ctypes.POINTER(ctypes.c_int), _E]),
    "kiln_tune": (ctypes.c_int, [_P, _P, ctypes.POINTER(TuneOptions), ctypes.POINTER(ctypes.POINTER(TuneResult)),
                                 ctypes.POINTER(ctypes.c_int), _E]),
    "kiln_demo_write": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint64, _E]),
}

LIB_NAMES = ("libkiln.so", "libkiln.so.0")


def _candidates():
    env = os.environ.get("KILN_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    for name in LIB_NAMES:  # beside the package
        yield os.path.join(here, name)
    # installed under a prefix: PREFIX/lib[/<multiarch>]/python3*/.../kiln -> PREFIX/lib*
    d = here
    for _ in range(6):
        d = os.path.dirname(d)
        for pat in ("lib/libkiln.so.0", "lib/*/libkiln.so.0", "lib64/libkiln.so.0"):
            yield from sorted(glob.glob(os.path.join(d, pat)))
    # the source tree's build directory (python/kiln -> build/)
    src = os.path.dirname(os.path.dirname(here))
    yield os.path.join(os.environ.get("KILN_BUILD_DIR", os.path.join(src, "build")), "libkiln.so")
    for d in ("/usr/local/lib", "/usr/local/lib64"):  # cmake's default prefix, before `ldconfig`
        yield os.path.join(d, "libkiln.so.0")
    found = ctypes.util.find_library("kiln")  # ldconfig's cache
    if found:
        yield found


def load():
    tried = []
    for path in _candidates():
        if "/" in path and not os.path.exists(path):
            tried.append(path)
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        for name, (res, args) in _SIGS.items():
            fn = getattr(lib, name)
            fn.restype = res
            fn.argtypes = args
        check_structs(lib, path)
        return lib, path
    raise ImportError("kiln: cannot find libkiln.so (looked at: %s). Build kiln (`make build`), or install it "
                      "(`cmake --install build --prefix PREFIX`), or set KILN_LIBRARY=/path/to/libkiln.so"
                      % ", ".join(tried) if tried else "kiln: cannot find libkiln.so")


def check_structs(lib, path):
    """ImportError when a mirrored struct's size differs from the library's."""
    size_of = getattr(lib, "kiln_struct_size", None)
    if size_of is None:
        raise ImportError("kiln: %s is older than this Python package (no kiln_struct_size); rebuild or reinstall kiln" % path)
    size_of.restype = ctypes.c_size_t
    size_of.argtypes = [ctypes.c_char_p]
    bad = ["%s (library %d bytes, package %d)" % (c, size_of(c.encode()), ctypes.sizeof(cls))
           for cls, c in _C_NAMES.items() if size_of(c.encode()) != ctypes.sizeof(cls)]
    if bad:
        raise ImportError("kiln: the Python package and %s disagree on %s; the package and the library must come from "
                          "the same kiln build" % (path, ", ".join(bad)))
