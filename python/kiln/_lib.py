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
                ("dims", ctypes.c_int64 * MAX_RANK), ("dim_names", ctypes.c_char_p * MAX_RANK)]


class ShapeBinding(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("rank", ctypes.c_int), ("dims", ctypes.c_int64 * MAX_RANK)]


class LoadOptions(ctypes.Structure):
    _fields_ = [("shapes", ctypes.POINTER(ShapeBinding)), ("nshapes", ctypes.c_int), ("max_model_bytes", ctypes.c_uint64)]


class RunStats(ctypes.Structure):
    _fields_ = [("last_ms", ctypes.c_double), ("kernels_launched", ctypes.c_int), ("programs_compiled", ctypes.c_int),
                ("compile_ms", ctypes.c_double), ("nodes_folded", ctypes.c_int), ("device_bytes", ctypes.c_uint64),
                ("intermediate_bytes", ctypes.c_uint64), ("pool_bytes", ctypes.c_uint64), ("plans_built", ctypes.c_int)]


class DeviceInfo(ctypes.Structure):
    _fields_ = [("platform_index", ctypes.c_int), ("device_index", ctypes.c_int), ("platform", ctypes.c_char * 128),
                ("vendor", ctypes.c_char * 128), ("name", ctypes.c_char * 128), ("driver", ctypes.c_char * 64),
                ("version", ctypes.c_char * 128), ("compute_units", ctypes.c_int), ("max_clock_mhz", ctypes.c_int),
                ("global_mem", ctypes.c_uint64), ("local_mem", ctypes.c_uint64), ("max_alloc", ctypes.c_uint64),
                ("max_work_group", ctypes.c_size_t), ("is_gpu", ctypes.c_int)]


_P = ctypes.c_void_p
_E = ctypes.POINTER(Error)
# name: (restype, argtypes)
_SIGS = {
    "kiln_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "kiln_device_list": (ctypes.c_int, [ctypes.POINTER(DeviceInfo), ctypes.c_int, ctypes.POINTER(ctypes.c_int), _E]),
    "kiln_device_open": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(_P), _E]),
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
    "kiln_session_set_db": (ctypes.c_int, [_P, _P, _E]),
    "kiln_tensor_free": (None, [ctypes.POINTER(Tensor)]),
    "kiln_db_open_layered": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(_P), _E]),
    "kiln_db_default_path": (ctypes.c_char_p, [ctypes.c_char_p, ctypes.c_size_t]),
    "kiln_db_close": (None, [_P]),
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
        return lib, path
    raise ImportError("kiln: cannot find libkiln.so (looked at: %s). Build kiln (`make build`), or install it "
                      "(`cmake --install build --prefix PREFIX`), or set KILN_LIBRARY=/path/to/libkiln.so"
                      % ", ".join(tried) if tried else "kiln: cannot find libkiln.so")
