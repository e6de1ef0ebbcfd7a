/* kiln.h: the public C API of kiln, an OpenCL runtime for ONNX models with
 * kernels tuned per device.
 *
 * A program that embeds kiln (see examples/hello.c; build with
 * `cc prog.c $(pkg-config --cflags --libs kiln)` after `cmake --install`):
 *
 *   kiln_device_open(NULL, &dev, &err);                 a device
 *   kiln_db_open(path, KILN_DB_CREATE, &db, &err);      optional: tuning records
 *   kiln_model_load("m.onnx", NULL, &model, &err);      the model
 *   kiln_session_create(model, dev, &sess, &err);       model x device
 *   kiln_session_set_db(sess, db, &err);                optional: tuned parameters
 *   kiln_session_set_input(sess, "input", t, &err);     for every input
 *   kiln_session_run(sess, &err);                       plan (first run), run
 *   kiln_session_output(sess, 0);                       read outputs
 *   kiln_tune(sess, db, &opts, &res, &n, &err);         optional: measure parameters
 *   kiln_session_free(sess); kiln_model_free(model); kiln_db_close(db); kiln_device_close(dev);
 *
 * Conventions:
 *  - Every fallible function returns 0 (KILN_OK) or a negative kiln status and,
 *    when `err` is not NULL, fills it with the status and a message that names
 *    the file, tensor or node concerned. On failure, out-parameters are left
 *    NULL (handles) or unchanged, and nothing needs freeing.
 *  - Handles are opaque; each *_open/_load/_create has a matching *_close/_free,
 *    and every *_close/_free accepts NULL.
 *  - Pointers returned by a handle's accessors (infos, outputs, paths) stay
 *    valid until that handle is freed or, for outputs, until the next run.
 *  - Objects are not thread-safe: use one device, database handle and session
 *    per thread, or serialize calls on shared ones. Different handles are
 *    independent.
 *  - The library never exits the process and keeps no global state beyond
 *    read-only tables.
 */
#ifndef KILN_H
#define KILN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility: what this header declares is
 * the whole exported interface of libkiln.so. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define KILN_VERSION "0.1.0"

/* Status codes: name, value, message. One list feeds the enum and kiln_strerror(). */
#define KILN_STATUS_MAP(XX)                                              \
  XX(OK, 0, "ok")                                                        \
  XX(EINVAL, -1, "invalid argument")                                     \
  XX(ENOMEM, -2, "out of memory")                                        \
  XX(EIO, -3, "I/O error")                                               \
  XX(EPARSE, -4, "malformed file")                                       \
  XX(EUNSUPPORTED, -5, "unsupported")                                    \
  XX(ESHAPE, -6, "shape or dtype mismatch")                              \
  XX(ENOTFOUND, -7, "not found")                                         \
  XX(ENODEVICE, -8, "no OpenCL device")                                  \
  XX(ECL, -9, "OpenCL error")                                            \
  XX(ELIMIT, -10, "limit exceeded")                                      \
  XX(EDB, -11, "database error")                                         \
  XX(EINTERNAL, -12, "internal error")

typedef enum {
#define XX(name, val, msg) KILN_##name = val,
  KILN_STATUS_MAP(XX)
#undef XX
} kiln_status;

/* Message of a status code; never NULL. */
const char *kiln_strerror(int status);

/* An error report: the status and a human-readable message. */
typedef struct kiln_error {
  int status;
  char msg[1024];
} kiln_error;

/* Element types use ONNX TensorProto.DataType numbering. */
typedef enum {
  KILN_DT_UNDEFINED = 0,
  KILN_DT_FLOAT = 1,
  KILN_DT_UINT8 = 2,
  KILN_DT_INT8 = 3,
  KILN_DT_UINT16 = 4,
  KILN_DT_INT16 = 5,
  KILN_DT_INT32 = 6,
  KILN_DT_INT64 = 7,
  KILN_DT_STRING = 8,
  KILN_DT_BOOL = 9,
  KILN_DT_FLOAT16 = 10,
  KILN_DT_DOUBLE = 11,
  KILN_DT_UINT32 = 12,
  KILN_DT_UINT64 = 13,
  KILN_DT_COMPLEX64 = 14,
  KILN_DT_COMPLEX128 = 15,
  KILN_DT_BFLOAT16 = 16,
  KILN_DT_COUNT = 17,
  KILN_DT_SEQUENCE = 100  /* not a tensor type: a value info's dtype for an ONNX seq(tensor) input or output */
} kiln_dtype;

#define KILN_MAX_RANK 8

/* Name of a dtype ("float", "int64", ...) and its size in bytes (0 if unsupported). */
const char *kiln_dtype_name(int dtype);
size_t kiln_dtype_size(int dtype);
/* sizeof the public struct `name` ("kiln_value_info", "kiln_run_stats", ...,
 * the typedef names of this header) as this library was built, 0 for a name
 * it does not know. For bindings that mirror the structs (python/kiln checks
 * every one it declares at import, so a header change cannot go unnoticed). */
size_t kiln_struct_size(const char *name);

/* ---- Host tensors ---------------------------------------------------- */

/* A dense row-major host tensor. The tensor owns `data`. For KILN_DT_STRING,
 * data is an array of numel NUL-terminated strings (char *, owned; NULL
 * reads as ""). */
typedef struct kiln_tensor {
  char *name;          /* may be NULL */
  int dtype;           /* kiln_dtype */
  int rank;
  int64_t dims[KILN_MAX_RANK];
  void *data;          /* numel * dtype size bytes */
} kiln_tensor;

/* Allocates a zero-filled tensor of `rank` (0..KILN_MAX_RANK) dimensions
 * dims[0..rank) (each >= 0); name is NULL. Returns NULL on a bad dtype, a
 * negative or unknown (-1) dimension, or no memory. Free with kiln_tensor_free. */
kiln_tensor *kiln_tensor_new(int dtype, int rank, const int64_t *dims);
/* Frees t, its data and name (strings too for KILN_DT_STRING); NULL is a no-op.
 * Never call it on a tensor returned by kiln_session_output. */
void kiln_tensor_free(kiln_tensor *t);
/* Product of the dimensions (1 for a scalar). */
int64_t kiln_tensor_numel(const kiln_tensor *t);
/* Reads a TensorProto (.pb) or NumPy (.npy) file, chosen by content, into a
 * new tensor *out (caller frees). KILN_EIO if the file cannot be read,
 * KILN_EPARSE if it is malformed, KILN_EUNSUPPORTED for an unknown dtype. */
int kiln_tensor_read(const char *path, kiln_tensor **out, kiln_error *err);
/* Writes .npy when the path ends in ".npy", a TensorProto otherwise; the file
 * is replaced. KILN_EIO on a write error. */
int kiln_tensor_write(const char *path, const kiln_tensor *t, kiln_error *err);

/* Sequences (ONNX seq(tensor)) travel as arrays of tensors. Reads a
 * SequenceProto (.pb) of tensors into *items (n of them; free with
 * kiln_sequence_free). KILN_EPARSE if the file is not one. */
int kiln_sequence_read(const char *path, kiln_tensor ***items, int *n, kiln_error *err);
void kiln_sequence_free(kiln_tensor **items, int n);
/* Reads an OptionalProto (.pb): a tensor (*t), a sequence of tensors
 * (*items, *n), or nothing (*t NULL, *items NULL, *n -1). */
int kiln_optional_read(const char *path, kiln_tensor **t, kiln_tensor ***items, int *n, kiln_error *err);

/* ---- Devices --------------------------------------------------------- */

typedef struct kiln_device kiln_device;

typedef struct kiln_device_info {
  int platform_index, device_index;
  char platform[128], vendor[128], name[128], driver[64], version[128];
  int compute_units, max_clock_mhz;
  uint64_t global_mem, local_mem, max_alloc; /* bytes */
  size_t max_work_group;
  int is_gpu;
  int native_vec_float; /* CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT (0: unknown) */
} kiln_device_info;

/* Lists OpenCL devices into `infos` (up to `cap`; infos may be NULL when cap
 * is 0); *count gets the total, which may exceed cap. KILN_ENODEVICE when no
 * OpenCL platform is installed. */
int kiln_device_list(kiln_device_info *infos, int cap, int *count, kiln_error *err);
/* The path of a GPU vendor's OpenCL library (NVIDIA's) that is installed but
 * that no ICD file names, so that OpenCL cannot see the GPU; NULL when there
 * is none. Seen in containers that mount the driver's folder: the GPU is then
 * missing from kiln_device_list, and only a CPU device (POCL) may be found. */
const char *kiln_unregistered_gpu_driver(void);
/* Opens a device. selector: NULL or "" = first GPU else first device;
 * "P:D" = platform P, device D; "N" = N-th device overall;
 * otherwise a case-insensitive substring of platform or device name.
 * Creates a context and an in-order queue; *out is closed with
 * kiln_device_close. KILN_ENODEVICE when nothing matches (the message lists
 * the devices), KILN_ECL when OpenCL fails. */
int kiln_device_open(const char *selector, kiln_device **out, kiln_error *err);
/* Releases the device's queue, context and compiled programs. Every session
 * created on it must be freed first. NULL is a no-op. */
void kiln_device_close(kiln_device *d);
/* The device's description; owned by d, valid until kiln_device_close. */
const kiln_device_info *kiln_device_get_info(const kiln_device *d);

/* ---- Options: what used to come from the environment ------------------- */

/* Everything a run, a plan or a tuning search depends on besides its
 * arguments. The library reads no environment variable of its own (only
 * HOME and OpenCL's OCL_ICD_VENDORS): a program that wants the KILN_*
 * variables calls kiln_options_from_env once and hands the result on, as the
 * `kiln` command does. Zero is every field's default. One table
 * (runtime/options.c, kiln_env_vars) lists the variables, the field each
 * fills and the key it enters; `kiln --help` and the README print it. */
enum { KILN_FUSE_AUTO = 0, KILN_FUSE_ALWAYS = 1, KILN_FUSE_NEVER = 2 };
typedef struct kiln_options {
  /* the kiln command's defaults (the library does not read them) */
  const char *device;       /* KILN_DEVICE: --device */
  const char *db;           /* KILN_DB: the user's tuning database (NULL: ~/.cache/kiln/tuning.db) */
  const char *db_path;      /* KILN_DB_PATH: shared databases "FILE1:FILE2", read-only */
  /* devices (kiln_device_set_options) and the sessions on them */
  const char *cache_dir;    /* KILN_CACHE_DIR: programs, quick probe, predictions (NULL: ~/.cache/kiln/programs; "off": none) */
  const char *kernel_dir;   /* KILN_KERNEL_DIR: kernels/<file>.cl read from here instead of the embedded copies */
  int no_probe;             /* KILN_PROBE=off: no quick probe; predictions rest on the prior's figures */
  unsigned gemm_kernels;    /* KILN_GEMM_KERNELS: bit k offers gemm KERNEL=k to the search (0: the default set) */
  int attention_fuse;       /* KILN_ATTENTION_FUSE: KILN_FUSE_AUTO (the cost model decides), _ALWAYS, _NEVER */
  int no_predict;           /* KILN_NO_PREDICT: parameters without a record are the descriptor defaults */
  int no_blocked;           /* KILN_BLOCKED=off: every value in the model's NCHW layout (no NCHW16c around depthwise convolutions) */
  int no_replay;            /* KILN_REPLAY=off: every run enqueues each node through its op, none replays an earlier run's launches */
  /* models (kiln_load_options.max_model_bytes when that is 0) */
  uint64_t max_model_bytes; /* KILN_MAX_MODEL_BYTES */
} kiln_options;

/* Fills *o from the KILN_* environment variables (string fields point into
 * the environment). KILN_EINVAL naming the variable for a malformed value.
 * The only place the library reads them. */
int kiln_options_from_env(kiln_options *o, kiln_error *err);
/* Applies the device fields of o (cache_dir, kernel_dir, no_probe,
 * gemm_kernels, attention_fuse, no_predict, no_blocked, no_replay; strings copied) to d, for the
 * programs it compiles and the sessions planned on it from now on. NULL:
 * the defaults. KILN_EINVAL for a path too long. */
int kiln_device_set_options(kiln_device *d, const kiln_options *o, kiln_error *err);

/* One row of the table of environment variables: its name, the value it
 * takes, what it changes and the key that change enters. */
typedef struct kiln_env_var {
  const char *name, *value, *changes, *key;
} kiln_env_var;
/* The table's rows (*n of them); static, never freed. */
const kiln_env_var *kiln_env_vars(int *n);

/* ---- Models ---------------------------------------------------------- */

typedef struct kiln_model kiln_model;

typedef struct kiln_shape_binding {
  const char *name;     /* input name, or a symbolic dimension name */
  int rank;
  int64_t dims[KILN_MAX_RANK];
} kiln_shape_binding;

typedef struct kiln_load_options {
  const kiln_shape_binding *shapes; /* optional */
  int nshapes;
  uint64_t max_model_bytes;          /* 0 = default (4 GiB) */
} kiln_load_options;

/* Loads an ONNX model file (with external data beside it). opt may be NULL;
 * its shape bindings fix input shapes or symbolic dimensions (strings are
 * copied). Shapes are inferred and constant subgraphs folded now; nothing
 * touches a device. KILN_EIO (unreadable), KILN_EPARSE (malformed or cyclic
 * graph), KILN_ELIMIT (larger than max_model_bytes), KILN_ESHAPE (bad shape
 * binding). *out is freed with kiln_model_free. */
int kiln_model_load(const char *path, const kiln_load_options *opt, kiln_model **out, kiln_error *err);
/* Frees a model; sessions created from it must be freed first. NULL is a no-op. */
void kiln_model_free(kiln_model *m);

typedef struct kiln_value_info {
  const char *name;
  int dtype;
  int rank;                       /* -1 if unknown */
  int64_t dims[KILN_MAX_RANK];    /* -1 for a dimension not yet bound */
  const char *dim_names[KILN_MAX_RANK]; /* symbolic names or NULL */
  int optional;                   /* an ONNX optional: may hold nothing (kiln_session_set_input_none) */
} kiln_value_info;

/* Number of graph inputs (initializers excluded) and outputs. */
int kiln_model_num_inputs(const kiln_model *m);
int kiln_model_num_outputs(const kiln_model *m);
/* Describes input / output i (0-based) in *info; its strings are owned by the
 * model. Inputs are described as declared (with load-time shape bindings),
 * whatever shapes a session ran them with since; outputs as declared until a
 * session planned, then as the current plan inferred them. Returns
 * KILN_EINVAL when i is out of range. */
int kiln_model_input_info(const kiln_model *m, int i, kiln_value_info *info);
int kiln_model_output_info(const kiln_model *m, int i, kiln_value_info *info);

typedef struct kiln_model_stats {
  int nodes, opset, ir_version;
  int64_t params;       /* elements in initializers */
  double flops;         /* multiply-adds count 2, per inference (0 if shapes unknown) */
  int unsupported;      /* nodes whose op has no device implementation */
} kiln_model_stats;
/* Fills *st; returns 0. */
int kiln_model_get_stats(const kiln_model *m, kiln_model_stats *st);

/* Calls fn(op_type, count, device_ok, ctx) once for each op type in the model;
 * device_ok is 0 for an op with no device implementation. op_type is only
 * valid during the call. */
void kiln_model_op_histogram(const kiln_model *m, void (*fn)(const char *op, int count, int device_ok, void *ctx), void *ctx);

/* Checks that every node can run on the device; on failure the message lists
 * every unsupported op type with its node names. */
int kiln_model_check_supported(const kiln_model *m, kiln_error *err);

/* ---- Sessions -------------------------------------------------------- */

typedef struct kiln_session kiln_session;

/* A session runs model m on device d; both are borrowed and must outlive it.
 * The plan lives in the model, so a model backs one session at a time.
 * KILN_EUNSUPPORTED when a node has no device implementation (as
 * kiln_model_check_supported). Free with kiln_session_free. */
int kiln_session_create(kiln_model *m, kiln_device *d, kiln_session **out, kiln_error *err);
/* Releases the session's device buffers and plan. NULL is a no-op. */
void kiln_session_free(kiln_session *s);
/* Copies `t` as the value of input `name` (t stays the caller's); checks
 * dtype and shape against the model: KILN_ENOTFOUND for an unknown name,
 * KILN_ESHAPE for a wrong dtype or rank or a dimension that contradicts one
 * the model (or a load-time shape binding) fixes. Dimensions the model leaves
 * symbolic or unknown may change from call to call: the next run plans for
 * the new shapes, and a set of input shapes seen before reuses its plan
 * (plans are cached per input-shape set, up to 8, least recently used
 * dropped; each holds its own copy of the weights, so plans not in use hold
 * at most 2 GiB of weights on the host and a quarter of the device's memory:
 * fewer are kept for a large model; see kiln_run_stats.plans_built). Every input must be set before
 * the first run; values persist across runs until set again. */
int kiln_session_set_input(kiln_session *s, const char *name, const kiln_tensor *t, kiln_error *err);
/* Runs the model on the device (plans on first run or when input shapes
 * change: kernel compilation happens then) and reads the outputs back to the
 * host. KILN_ENOTFOUND when an input was never set, KILN_ECL on OpenCL errors. */
int kiln_session_run(kiln_session *s, kiln_error *err);
/* Output i of the last run, or NULL (i out of range, or no run yet); owned by
 * the session and valid until the next run or kiln_session_free. */
const kiln_tensor *kiln_session_output(const kiln_session *s, int i);
/* A sequence-typed input (its value info's dtype is KILN_DT_SEQUENCE): n
 * tensors, copied. The plan is specialized to their count and shapes. */
int kiln_session_set_input_sequence(kiln_session *s, const char *name, kiln_tensor *const *items, int n, kiln_error *err);
/* An optional input (value info `optional`) that holds nothing. */
int kiln_session_set_input_none(kiln_session *s, const char *name, kiln_error *err);
/* Output i when it is a sequence, after kiln_session_run (ref = 0) or
 * kiln_session_run_reference (ref = 1, whose tensor for it is then empty):
 * its item count and *items (owned by the session); -1 when output i is not
 * a sequence. */
int kiln_session_output_sequence(const kiln_session *s, int i, int ref, kiln_tensor *const **items);

typedef struct kiln_run_stats {
  double last_ms;          /* wall time of the last run, ms */
  int kernels_launched;    /* per run */
  int programs_compiled;   /* total in this session's device */
  double compile_ms;       /* total: builds, and fetching the built binaries into the program cache
                              (POCL generates every kernel's code then) */
  int nodes_folded;        /* computed at load time */
  uint64_t device_bytes;   /* device memory held by the plan */
  uint64_t intermediate_bytes; /* sum of the sizes of all tensors the model computes on the device (not inputs, outputs, weights) */
  uint64_t pool_bytes;     /* device buffers those share (the memory planner's peak; part of device_bytes) */
  int plans_built;         /* plans made by this session so far: one per new set of input shapes
                              (or bound input values); a set seen before reuses its cached plan
                              (up to 8 kept, least recently used dropped) */
  double codegen_ms;       /* of compile_ms: machine code generated at kernels' first launches (drivers
                              such as POCL generate it per work-group size then, not at build time) */
  uint64_t streamed_bytes; /* weights uploaded by the last run (kiln_session_set_max_memory), 0 when all resident */
  uint64_t peak_device_bytes; /* the most device memory the plan held during its runs: device_bytes, the
                              kernels' own blocks (packed weights, scratch) and the largest streamed kernel */
  int blocked_values;      /* tensors the plan keeps in NCHW16c (around depthwise convolutions; KILN_BLOCKED=off: none) */
} kiln_run_stats;
/* Fills *st with the figures of the last run (zeros before the first). */
void kiln_session_get_stats(const kiln_session *s, kiln_run_stats *st);

/* Runs the CPU reference implementation of the whole model on the same
 * inputs; used by tests and `kiln run --check`. *outs gets *nouts new tensors
 * in output order, owned by the caller (kiln_tensor_free each, then free the
 * array). Slow for large models (a plain host implementation). */
int kiln_session_run_reference(kiln_session *s, kiln_tensor ***outs, int *nouts, kiln_error *err);

/* ---- Profiling ------------------------------------------------------- */

/* With profiling on, each run records when every node's kernels ran on the
 * device (profiling events; a fused group's kernel counts for its last node). */
void kiln_session_set_profiling(kiln_session *s, int on);
/* One node's kernels in the last profiled run: start of its first kernel
 * relative to the run's first kernel, and the span to its last kernel's end
 * (us). Nodes that launched nothing are left out. */
typedef struct kiln_node_time {
  char node[128], op[32];
  double start_us, span_us;
  double bytes;  /* device bytes its kernels must move at least once: the inputs of its
                    (fused) nodes from outside the group, weights included, and its outputs */
  int compute;   /* 1: the kernel of a Conv, ConvTranspose, Gemm, MatMul or attention (compute-bound
                    work); 0: element-wise, norms, reductions, pooling, data movement */
} kiln_node_time;
/* The last profiled run's node times in execution order; *out owned by the
 * caller (free()). KILN_ENOTFOUND when no profiled run happened yet. */
int kiln_session_node_times(const kiln_session *s, kiln_node_time **out, int *n);

/* ---- Fusion ---------------------------------------------------------- */

/* Fusion on (default) or off (--no-fusion) for the session's next plan. */
void kiln_session_set_fusion(kiln_session *s, int enabled);

/* ---- Precision ------------------------------------------------------- */

/* How float tensors are stored on the device (--precision). FP32: as
 * float. FP16: as half (vload_half/vstore_half, arithmetic in fp32) in every
 * node whose kernels have a half variant; weights are converted once at plan
 * time, conversions are inserted where a node without one (an fp32 island)
 * meets half tensors; the model's inputs and outputs keep their types. AUTO:
 * FP16 only for nodes whose measured error against the fp32 CPU reference on
 * seeded inputs stays under KILN_PRECISION_AUTO_TOL (relative to max |ref|),
 * and no conversions are added for an op that fp32 neighbours surround. */
typedef enum kiln_precision { KILN_PRECISION_FP32 = 0, KILN_PRECISION_FP16 = 1, KILN_PRECISION_AUTO = 2 } kiln_precision;
#define KILN_PRECISION_AUTO_TOL 2e-3
/* Sets the precision of the session's next plan; KILN_EINVAL for a value
 * outside kiln_precision. */
int kiln_session_set_precision(kiln_session *s, int precision, kiln_error *err);
int kiln_session_precision(const kiln_session *s);
/* "fp32", "fp16", "auto" (NULL for other values); and the parser (-1: none). */
const char *kiln_precision_name(int precision);
int kiln_precision_parse(const char *name);

/* One grouping of nodes considered by the last plan, taken or rejected. */
typedef struct kiln_fusion_info {
  char root[128], nodes[256], kind[24], reason[192];
  int nnodes, fused, probed;      /* probed: predictions from the device's probe */
  double pred_fused_ns, pred_unfused_ns;
  double meas_fused_ns, meas_unfused_ns; /* recorded by `kiln tune` on this device (then they decided); <= 0 if none */
} kiln_fusion_info;
/* The last plan's groupings; *out owned by the caller (free()). */
int kiln_session_fusion(const kiln_session *s, kiln_fusion_info **out, int *n);

/* Plans the session for its bound inputs and reports the device memory the
 * plan holds (buffers, weights, parameters), before anything runs. */
int kiln_session_plan_memory(kiln_session *s, uint64_t *bytes, kiln_error *err);
/* A device memory budget for the session's plans (0: none). A plan whose
 * buffers, weights and kernels' own blocks would exceed it keeps its
 * activations resident and streams the weights of as few kernels as it can
 * (largest first) from host memory, uploading them before each run of their
 * kernel: same outputs, bytes streamed in kiln_run_stats.streamed_bytes.
 * Planning fails with KILN_ELIMIT when even streaming every weight does not
 * fit; kiln_session_plan_memory then reports the planned peak. */
int kiln_session_set_max_memory(kiln_session *s, uint64_t bytes);

/* One kernel of the last plan: the nodes it covers, its parameters and where
 * they came from ("tuned", "predicted", "default", "generated" for fused
 * kernels, "fixed" for kernels without parameters), predicted and measured
 * time (-1 when unknown). */
typedef struct kiln_plan_kernel {
  char node[128], ops[256], family[32], params[256], origin[16];
  int nodes_covered;
  double predicted_ns, measured_ns;
  char precision[8];       /* storage of its float tensors: "fp32", "fp16", "-" (none) */
  char precision_why[96];  /* why (kiln_session_set_precision) */
} kiln_plan_kernel;
/* Plans (and runs once) the session; with measure, each kernel is timed
 * from profiling events. *out owned by the caller (free()). */
int kiln_session_plan_info(kiln_session *s, int measure, kiln_plan_kernel **out, int *nout, kiln_error *err);

/* ---- Tuning database -------------------------------------------------- */

typedef struct kiln_db kiln_db;
enum { KILN_DB_READONLY = 1, KILN_DB_CREATE = 2, KILN_DB_WRITE = 4, KILN_DB_NO_MKDIR = 8 };

/* Opens (and with KILN_DB_CREATE creates) a tuning database. Refuses, with
 * KILN_EDB and a message naming the file, a file that is empty, truncated,
 * corrupt, not SQLite, another application's SQLite file, or of a newer
 * schema; such files are left untouched. An older schema is migrated in place
 * inside a transaction after a backup copy (<path>.bak-v<N>). Without
 * KILN_DB_CREATE a missing file is KILN_ENOTFOUND; KILN_DB_READONLY never
 * writes. A file this user cannot write (or whose directory it cannot write)
 * is opened read-only whatever the flags (SQLite's immutable open: no journal
 * or -shm file is made beside it, its bytes never change); writes to it then
 * fail, and with KILN_DB_WRITE the open itself is refused with KILN_EDB and a
 * message saying why. KILN_DB_NO_MKDIR: with KILN_DB_CREATE, a missing parent
 * directory is an error (KILN_ENOTFOUND naming it) instead of being created.
 * Several processes may share one file (SQLite locking; busy writers are
 * retried). Close with kiln_db_close. */
int kiln_db_open(const char *path, int flags, kiln_db **out, kiln_error *err);
/* Closes the database; sessions using it must be freed first. NULL is a no-op. */
void kiln_db_close(kiln_db *db);
/* Opens what a reading command (run, plan, bench, predict) consults: the user
 * database `path` when it exists (read-only when this user cannot write it;
 * KILN_ENOTFOUND when it is missing and `must_exist`), with the files of the
 * ':'-separated `layers` (KILN_DB_PATH) attached. When the user database is
 * missing and layers are given, an empty in-memory database (path
 * "(none)") carries the layers: nothing is created. *out is NULL (and 0
 * returned) when there is neither. */
int kiln_db_open_layered(const char *path, int must_exist, const char *layers, kiln_db **out, kiln_error *err);
/* "user.db + shared1.db + shared2.db" (paths of the user database and its
 * layers), for messages saying where parameters came from. */
void kiln_db_describe(const kiln_db *db, char *buf, size_t len);
/* 1 when the database was opened read-only (asked for, or not writable). */
int kiln_db_is_readonly(const kiln_db *db);
/* The path the database was opened with; owned by db. */
const char *kiln_db_path(const kiln_db *db);
/* Default path: ~/.cache/kiln/tuning.db (the kiln command: $KILN_DB first). Writes into buf. */
const char *kiln_db_default_path(char *buf, size_t len);

/* Makes the session use tuning records from `db` (not owned) for its device;
 * registers the device in a writable database. Kernels without a record use
 * their defaults. */
int kiln_session_set_db(kiln_session *s, kiln_db *db, kiln_error *err);

/* Where each tunable kernel's parameters came from in the last plan (zeros
 * before the first run): measured records, cost-model predictions, defaults. */
typedef struct kiln_param_stats { int tunable, tuned, predicted, defaulted; } kiln_param_stats;
void kiln_session_param_stats(const kiln_session *s, kiln_param_stats *ps);
/* What the "predicted" parameters of the last plan rest on: the cost model's
 * built-in prior for devices of this kind (per-family corrections) on device
 * figures that come from the database's probe of this device ("probe"), the
 * quick probe measured on first use ("quick probe") or kept
 * from then in the user's cache ("cached quick probe"), or the prior's own
 * figures ("prior": probing off, no cache directory, or the probe failed).
 * figures is "" before the first plan. cache: the quick probe's cache file;
 * note: why the cache was not used or written (never an error of the run);
 * probe_ms: the quick probe's time when it ran in this session (else 0),
 * probe_compile_ms the part of it spent compiling: building its program and
 * each kernel's first launch, where a driver may generate the kernel's code
 * (POCL does); also counted in kiln_run_stats.compile_ms. */
typedef struct kiln_param_basis {
  char figures[32];
  char cache[640];
  char note[1024];
  double probe_ms, probe_compile_ms;
  double copy_gbps; /* the figures' copy bandwidth at their largest working set (GB/s, read + write; 0: none) */
  double copy_bytes; /* that working set: 128 MiB from `kiln probe` and from the quick probe (no cache holds it) */
} kiln_param_basis;
void kiln_session_param_basis(const kiln_session *s, kiln_param_basis *b);

/* ---- Device probe ----------------------------------------------------- */

/* One measured figure of the device: median of repeats, best sample, and
 * spread ((p80 - p20) / median). */
/* (The figures feed the cost model; `kiln report` plots them.) */
typedef struct kiln_probe_figure {
  char name[48];       /* e.g. "copy_128MiB", "flops_vec8", "launch" */
  char unit[16];       /* "GB/s", "GFLOP/s", "us", "ms/kB" */
  double value, best, spread;
} kiln_probe_figure;

/* Runs the microbenchmarks on d; with db, stores them on the device's row.
 * *figs is owned by the caller (free()). */
int kiln_probe(kiln_device *d, kiln_db *db, kiln_probe_figure **figs, int *nfigs, kiln_error *err);

/* ---- Cost model ------------------------------------------------------- */

/* One node's prediction: the algorithm and parameters the cost model would
 * choose, the predicted time, and the measured time (-1 if not measured). */
typedef struct kiln_node_prediction {
  char node[128], op[48], family[32], shape_key[192], params[256];
  double predicted_ns, measured_ns;
} kiln_node_prediction;

/* Predicts every device node of the model. With `profile` (a known GPU, see
 * kiln_costmodel_profiles), no device is needed: the model's input shapes must
 * be bound; the profile's spec-sheet figures (the probe of the built-in GPU
 * prior's device instead, when the profile names it) and the GPU prior's
 * corrections are used. Without it, `s` (inputs set) runs on its device using the probe in
 * `db`, and each node is also measured. *out is owned by the caller (free()). */
int kiln_predict(kiln_model *m, const char *profile, kiln_session *s, kiln_db *db, kiln_node_prediction **out, int *nout, kiln_error *err);
/* Names of the device profiles, NULL-terminated. */
const char *const *kiln_costmodel_profiles(void);

/* Held-out accuracy of the cost model per kernel family on a device's records. */
typedef struct kiln_model_eval {
  char family[32];
  int instances, records;
  double kendall_tau, top1, top5, regret;
} kiln_model_eval;
int kiln_costmodel_eval(kiln_db *db, kiln_device *d, kiln_model_eval **out, int *nout, kiln_error *err);

/* ---- Tuning ----------------------------------------------------------- */

typedef struct kiln_tune_progress {
  int instance, ninstances;      /* 1-based index of the instance being tuned */
  const char *family, *shape_key;
  int trial, ntrials;            /* candidates measured so far / planned */
  double best_ns, default_ns;    /* so far */
  double elapsed_s, eta_s;
  /* instances are tuned in order of their predicted share of the model's time
   * (the cost model's time of each times its count), largest first; those
   * below 0.5% only with budget left over. share: this instance's; covered:
   * the share of the instances done so far plus this one's part done (0..1) */
  double share, covered;
  int extra;                     /* 1: a second search with budget left over (covered stays 1; eta_s: the
                                    budget left) */
} kiln_tune_progress;

typedef struct kiln_tune_result {
  char family[32], shape_key[192], params[256], dtype[16];
  int trials, rejected, skipped;  /* skipped: already tuned (resume) */
  int tuned;                      /* 1: the instance is marked tuned (now or before): resume skips it */
  int candidates;                 /* size of the valid search space */
  int refreshed;                  /* stored records whose cost-model features were stale
                                     (an older kiln's definitions) and were recomputed */
  double default_ns, best_ns;     /* fastest repeats (medians where a record has none); <0 when unknown */
  /* --compare-strategies (compare): the model strategy replayed on this
   * run's exhaustive measurements of the instance: candidates it measures,
   * the measured time of its pick with only this run's earlier picks as
   * prior (cold) and with the database's other instances (warm), and the
   * cold pick and the exhaustive best re-timed back to back (pick, best) */
  int cmp_space, cmp_measured;    /* candidates compared (a spread subset under --max-trials) */
  double cmp_cold_ns, cmp_warm_ns, cmp_pick_ns, cmp_best_ns;
  char cmp_params[256];
  double share;                   /* predicted share of the model's time (0..1; the tuning order) */
  int noisy;                      /* 1: its contenders were compared on noise-dominated rounds, also when
                                     timed again at the end of the run (the pick may be a near-tie's coin
                                     flip; `kiln db verify --retime` checks it later) */
  int extra;                      /* of trials, those of a second search with budget left over (largest
                                     shares first, candidates not measured before) */
} kiln_tune_result;

#define KILN_TUNE_PROBE_MIN_BUDGET 120.0 /* s */
typedef struct kiln_tune_options {
  double budget_s;          /* whole run, from kiln_tune's start (verification and the
                               device probe included); 0 = unlimited. Below
                               KILN_TUNE_PROBE_MIN_BUDGET a device never probed is not
                               probed: the cost model's built-in prior stands in */
  volatile const int *stop; /* optional: when *stop becomes non-zero (a signal handler), the
                               candidate being measured is finished and stored, and kiln_tune
                               returns what it has (the database resumes from there) */
  int max_trials;           /* per instance; 0 = unlimited */
  const char *strategy;     /* "model" (default: rank by the cost model, measure the most
                               promising ~10%, refit, repeat), "exhaustive" or "random" */
  int probe;                /* run `kiln probe` first if the device has no probe (model: always) */
  uint64_t seed;
  const char *families;     /* comma list of kernel families to tune; NULL: all */
  double max_gflop;         /* > 0: skip instances whose default candidate does more arithmetic */
  int compare;              /* measure every candidate (reusing this device's records of the
                               instance), then replay the model strategy on those times */
  void (*progress)(const kiln_tune_progress *p, void *ctx); /* optional */
  void *ctx;
  double fusion_close;      /* fusion groupings whose predicted fused and separate times are
                               within this factor are measured both ways and recorded (family
                               "fusion"); 0: 1.5; < 0: none. Skipped with compare, when the
                               budget is spent, or when families leaves out "fusion" */
  double evict_mb;          /* > 0 (an experiment): before every timed run, overwrite a device
                               buffer of this many MB so that candidates do not find their
                               weights in a cache the run before left them in */
} kiln_tune_options;

/* Tunes every tunable kernel instance of the session's model (inputs must be
 * set) on its device and stores every candidate in `db`: each candidate is
 * checked against the CPU reference before its time counts. Instances that
 * `db` already marks as tuned are skipped (resume). On return *results (owned
 * by the caller, free()) lists the instances. */
int kiln_tune(kiln_session *s, kiln_db *db, const kiln_tune_options *o, kiln_tune_result **results, int *nresults, kiln_error *err);
/* KILN_EINVAL naming the valid ones when the comma list `families` (NULL or
 * "": all) has a name that is none of the model's tunable kernel families or
 * "fusion" (plans the session; kiln_tune checks the same). For a check before
 * any database is opened. */
int kiln_tune_check_families(kiln_session *s, const char *families, kiln_error *err);

/* ---- Demo models ----------------------------------------------------- */

/* Writes the built-in demo model `which` ("cnn" or "transformer") with weights
 * drawn from `seed` to `path`. */
int kiln_demo_write(const char *which, const char *path, uint64_t seed, kiln_error *err);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* KILN_H */
