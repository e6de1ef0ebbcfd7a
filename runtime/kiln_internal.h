/* kiln_internal.h: the graph IR, the op registry interface, the OpenCL device
 * layer and shared helpers. Everything in runtime/ and the op files include it.
 *
 * The life of a model:
 *   load (onnx_load.c)  -> kiln_graph with values and nodes, initializers as
 *                          constant values with host data;
 *   plan (graph.c)      -> shapes bound from inputs, every node's `infer` run in
 *                          topological order, nodes whose inputs are all
 *                          constant folded with their CPU reference (`ref`);
 *   run  (exec.c)       -> every remaining node's `dev` enqueues OpenCL kernels.
 */
#ifndef KILN_INTERNAL_H
#define KILN_INTERNAL_H

#include "kiln.h"
#include <CL/cl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors ----------------------------------------------------------- */

/* runtime/options.c: environment defaults for CPU OpenCL drivers (POCL_AFFINITY),
 * set once before the first OpenCL call. */
void kiln__cpu_driver_env(void);
/* Sets err (if not NULL) to status and a printf-style message; returns status. */
int kiln__err(kiln_error *err, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The monotonic clock in seconds. */
double kiln__now_s(void);
/* qsort comparators, ascending: doubles, uint64_t. */
int kiln__cmp_double(const void *a, const void *b);
int kiln__cmp_u64(const void *a, const void *b);
/* splitmix64: the next value of the small seeded generator in *s. */
uint64_t kiln__splitmix(uint64_t *s);
/* Room for element n of the array v (cap elements of es bytes allocated):
 * v itself while n < *cap, else v grown to twice *cap (first when *cap is
 * 0), with *cap updated; NULL when out of memory (v and *cap unchanged). */
void *kiln__grow(void *v, int n, int *cap, size_t es, int first);
const char *kiln__clerror(cl_int e);

/* ---- values and nodes -------------------------------------------------- */

/* Internal type of sequence values (ONNX seq(tensor)). A sequence is resolved
 * at plan time: its value's `data` is a kiln_seq listing views of tensor
 * values; the tensors themselves stay in device buffers. */
typedef struct kiln_seq_item {
  int vid;          /* tensor value holding the element */
  int axis;         /* -1: the whole tensor; else a slice [start, start+len) along axis */
  int64_t start, len;
  int keepdims;     /* 0: the sliced axis (len 1) is removed */
} kiln_seq_item;
typedef struct kiln_seq {
  int n;
  int elem_dtype;
  kiln_seq_item items[];
} kiln_seq;

typedef struct kiln_graph kiln_graph;

typedef enum { KILN_ATTR_FLOAT = 1, KILN_ATTR_INT, KILN_ATTR_STRING, KILN_ATTR_TENSOR, KILN_ATTR_GRAPH,
               KILN_ATTR_FLOATS, KILN_ATTR_INTS, KILN_ATTR_STRINGS } kiln_attr_type;

typedef struct kiln_attr {
  char *name;
  int type;           /* kiln_attr_type */
  float f;
  int64_t i;
  char *s;            /* KILN_ATTR_STRING (NUL-terminated) */
  int n;              /* count for FLOATS / INTS / STRINGS */
  float *floats;
  int64_t *ints;
  char **strings;
  kiln_tensor *t;     /* KILN_ATTR_TENSOR */
  struct kiln_graph *g; /* KILN_ATTR_GRAPH: the subgraph (owned) */
} kiln_attr;

/* A value (edge) of the graph. */
typedef struct kiln_value {
  char *name;
  int dtype;                 /* kiln_dtype; 0 until inferred */
  int rank;                  /* -1 until inferred */
  int64_t dims[KILN_MAX_RANK];
  char *dim_param[KILN_MAX_RANK]; /* symbolic names from the model (inputs) */
  void *data;                /* host data when known at plan time (owned), else NULL */
  int64_t strw;              /* KILN_DT_STRING: bytes per element of the packed rows */
  bool is_const;             /* initializer, Constant output or folded */
  bool is_input, is_output, is_initializer;
  bool optional, none;       /* an ONNX optional; none: it holds nothing (its dtype/shape then an empty stand-in) */
  int producer;              /* node index, -1 for inputs/initializers */
  bool half;                 /* a float value stored as fp16 on the device (precision.c); host data stays float */
  int blk;                   /* 0, or a 4-D float value stored blocked on the device, [N][C/blk][H][W][blk], blk 16 or 8 (layout.c); host data stays NCHW */
  bool streamed;             /* a weight uploaded before each run of its kernel, not resident (stream.c) */
  bool stream_ok;            /* a weight that may stream (stream.c) */
  int nconsumers;
  /* device side, owned by the session's plan */
  cl_mem buf;
} kiln_value;

struct kiln_op_def;
#define KILN_MAX_KPARAMS_NODE 12

typedef struct kiln_node {
  char *name;
  char *op_type;
  char *domain;
  int nin, nout;
  int nin_formal;            /* inputs the model names; those after are values its subgraphs capture */
  int *in;                   /* value ids; -1 for an omitted optional input */
  int *out;                  /* value ids; -1 for an omitted optional output */
  int nattr;
  kiln_attr *attrs;
  const struct kiln_op_def *op; /* NULL if the op type is unknown */
  int opset;                 /* opset version of the node's domain */
  bool folded;               /* computed at plan time on the host */
  bool skip_dev;             /* output 0 aliases input 0's buffer: nothing to launch (memory plan) */
  int fuse_root;             /* index of the fused group's last node, -1 if not fused */
  struct kiln_fgroup *fgroup;/* on a group's last node: the fused kernel (fusion.c) */
  struct kiln_fgroup *epi;   /* on a Conv/Gemm/MatMul whose kernel applies an epilogue group (not owned) */
  bool im2col_fused;         /* Conv: the plan's GEMM reads the input itself, no im2col copy (fusion.c) */
  /* per-node device state, owned by the plan; see kiln_exec_param()/scratch() */
  cl_mem param[4];
  size_t param_bytes[4];
  uint64_t param_hash[4];     /* content hash of small param blocks */
  cl_mem scratch[4];
  size_t scratch_bytes[4];
  bool streamed;             /* its kernel's weights stream (stream.c) */
  bool packed_w1;            /* its kernel reads input 1 (weights) only as packed into param slot 1: a
                                streamed node uploads the packed copy alone (stream.c) */
  void *state;               /* op-private, freed with free() */
  int tparams[KILN_MAX_KPARAMS_NODE]; /* chosen tunable parameters (see kiln_exec_tparams) */
  bool half;                 /* its float tensors are stored as fp16 (precision.c) */
  const char *prec_why;      /* why it runs in its precision (static text), NULL: no float tensors */
  const char *tparams_origin; /* NULL until chosen */
  struct kiln_replay *replay; /* its launches as recorded on a run of the plan (replay.c) */
} kiln_node;

struct kiln_graph {
  kiln_value *vals;
  int nvals, capvals;
  kiln_node *nodes;
  int nnodes, capnodes;
  int *inputs, ninputs;      /* graph inputs that are not initializers */
  int nformal;               /* declared inputs; a subgraph's later inputs are captured outer values */
  int *outputs, noutputs;
  int opset;                 /* default-domain opset */
  int ir_version;
  char *path;                /* model file */
  void **ref_host;           /* during reference runs: host buffers per value (see kiln_node_run_ref_host) */
  bool fusion;               /* the plan fuses (kernels may merge producer steps, e.g. im2col into the GEMM) */
  struct kiln_fusion_decision *pdec; /* plan-time pattern rewrites done (passes.c), listed by kiln plan */
  int npdec;
  const struct kiln_dev_opts *dev_opt; /* the options of the device a session runs it on (NULL: defaults) */
  int precision;             /* KILN_PRECISION_* the graph's conversions were inserted for (precision.c) */
};

/* Attribute lookup; the *_or variants return `dflt` when absent. */
const kiln_attr *kiln_attr_find(const kiln_node *n, const char *name);
int64_t kiln_attr_int(const kiln_node *n, const char *name, int64_t dflt);
float kiln_attr_float(const kiln_node *n, const char *name, float dflt);
const char *kiln_attr_str(const kiln_node *n, const char *name, const char *dflt);
/* INTS attribute: returns count (or -1 if absent) and sets *vals. */
int kiln_attr_ints(const kiln_node *n, const char *name, const int64_t **vals);
int kiln_attr_floats(const kiln_node *n, const char *name, const float **vals);

/* Value helpers. `i` is the node's input/output slot. */
static inline bool kiln_has_in(const kiln_node *n, int i) { return i < n->nin && n->in[i] >= 0; }
static inline bool kiln_has_out(const kiln_node *n, int i) { return i < n->nout && n->out[i] >= 0; }
static inline kiln_value *kiln_in(kiln_graph *g, const kiln_node *n, int i) { return kiln_has_in(n, i) ? &g->vals[n->in[i]] : NULL; }
static inline kiln_value *kiln_out(kiln_graph *g, const kiln_node *n, int i) { return kiln_has_out(n, i) ? &g->vals[n->out[i]] : NULL; }
int64_t kiln_value_numel(const kiln_value *v);
size_t kiln_value_bytes(const kiln_value *v);
/* The element type of v's device buffer (float16 for a half-stored float
 * value) and the buffer's size; kernels are built for the former. */
static inline int kiln_dev_dtype(const kiln_value *v) { return v->half ? KILN_DT_FLOAT16 : v->dtype; }
size_t kiln_value_dev_bytes(const kiln_value *v);
/* Sets an output's dtype and shape (used by infer functions). */
void kiln_set_out(kiln_graph *g, const kiln_node *n, int i, int dtype, int rank, const int64_t *dims);
/* Reads element k of a known integer/float value as int64 / double (any dtype). */
int64_t kiln_value_geti(const kiln_value *v, int64_t k);
double kiln_value_getf(const kiln_value *v, int64_t k);
/* Normalizes a possibly negative axis; returns -1 if out of range. */
static inline int kiln_axis(int64_t a, int rank) { if (a < 0) a += rank; return (a < 0 || a >= rank) ? -1 : (int)a; }
/* Row-major strides of a shape (in elements). */
void kiln_strides(int rank, const int64_t *dims, int64_t *strides);
/* Strides (elements) of value v viewed as broadcast to an output of rank r:
 * 0 on axes where v has size 1 or is missing (leading axes). */
void kiln_bcast_strides(const kiln_value *v, int r, int64_t *st);
/* Numpy-style multidirectional broadcast of two shapes; returns 0 or KILN_ESHAPE. */
int kiln_broadcast_shape(int ra, const int64_t *a, int rb, const int64_t *b, int *rout, int64_t *out);

/* String tensors travel as packed rows of `w` bytes (NUL-padded): the row
 * width for a host tensor, packing (malloc'd) and unpacking into t. */
int64_t kiln_strings_width(const kiln_tensor *t);
void *kiln_strings_pack(const kiln_tensor *t, int64_t w);
int kiln_strings_unpack(kiln_tensor *t, const void *packed, int64_t w);

/* ---- CPU element access (reference ops) -------------------------------- */

/* Load/store element k of a buffer of dtype as double / int64 (for generic refs). */
double kiln_load_f(const void *p, int dtype, int64_t k);
int64_t kiln_load_i(const void *p, int dtype, int64_t k);
void kiln_store_f(void *p, int dtype, int64_t k, double v);
void kiln_store_i(void *p, int dtype, int64_t k, int64_t v);
static inline bool kiln_dtype_is_float(int dt) { return dt == KILN_DT_FLOAT || dt == KILN_DT_DOUBLE || dt == KILN_DT_FLOAT16 || dt == KILN_DT_BFLOAT16; }

/* ---- OpenCL device layer ----------------------------------------------- */

typedef struct kiln_cl_prog {
  char *key;            /* file + '\n' + options */
  uint64_t hash;        /* of key: compared first (a tuning run holds thousands of programs) */
  cl_program prog;
  struct kiln_cl_kern { char *name; cl_kernel k; } *kerns;
  int nkerns;
  char bkey[24];        /* its name in the binary cache */
  bool unsaved;         /* built while binaries were deferred: not in the binary cache yet */
} kiln_cl_prog;

/* A device's options (kiln_device_set_options; kiln_options of kiln.h). */
typedef struct kiln_dev_opts {
  char kernel_dir[512];      /* "" = the embedded kernels */
  bool no_probe;             /* no quick probe */
  unsigned gemm_kernels;     /* gemm KERNEL values offered to the search (bit k), 0 = the default set */
  int attention_fuse;        /* KILN_FUSE_AUTO / _ALWAYS / _NEVER */
  bool no_predict;           /* no cost-model predictions: descriptor defaults */
  bool no_blocked;           /* no NCHW16c values (layout.c) */
  bool no_replay;            /* no replayed launches (replay.c) */
} kiln_dev_opts;

struct kiln_device {
  kiln_device_info info;
  kiln_dev_opts opt;
  cl_platform_id platform;
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue q;
  bool has_fp64;
  bool has_fma;              /* CL_FP_FMA in the single-precision config: kernels that name KILN_FMA get -DKILN_FMA=1 */
  kiln_cl_prog *progs;
  int nprogs, capprogs;
  char cache_dir[512];       /* binary cache files, "" = off (used when bin_db is NULL) */
  struct kiln_db *bin_db;    /* binary cache in the tuning database (not owned) */
  const struct kiln_record_source *bin_src; /* how bin_db is read (db/: kiln_db_records) */
  int programs_compiled;
  cl_mem evict;              /* the tuner's cache-eviction buffer (kiln_tune_options.evict_mb), or NULL */
  size_t evict_bytes;
  cl_uint evict_salt;        /* changes the fill on every eviction */
  int programs_from_cache;
  double compile_ms;          /* building programs, fetching binaries and first-launch code generation */
  double codegen_ms;         /* of compile_ms: code generated at kernels' first launches (below) */
  uint64_t *seen;            /* (kernel, work-group shape) pairs launched before: open addressing, 0 = empty */
  int nseen, capseen;
  int launches;              /* kernels enqueued since open */
  bool profile;
  double build_deadline_ms;  /* > 0: a build from source that would start later is refused (kiln_tune's budget) */
  volatile const int *build_stop; /* non-NULL and set: builds from source are refused (kiln_tune's stop) */
  int builds_refused;
  bool defer_binaries;       /* programs built from source are not stored in the binary cache (kiln_tune's candidates) */
  bool save_used;            /* a deferred program is stored when a launch asks for its kernel (kiln_tune's winners) */
};

/* Returns the kernel `name` from kernels/`file` built with `options`
 * (compiled once per device, cached in memory and on disk). Owned by the device.
 * Prepends "#define T <ctype>" style options given by the caller. */
cl_kernel kiln_cl_kernel(kiln_device *d, const char *file, const char *options, const char *name, kiln_error *err);
/* Like kiln_cl_kernel for a program used once (the probe, whose figures are
 * cached instead): a build from source is not stored in the binary cache,
 * which on POCL saves generating code for every kernel of the program. */
cl_kernel kiln_cl_kernel_once(kiln_device *d, const char *file, const char *options, const char *name, kiln_error *err);
/* Keeps compiled programs in db's binary cache instead of files (NULL: files). */
void kiln_device_set_binary_db(kiln_device *d, struct kiln_db *db, const struct kiln_record_source *src);
/* From now on, refuse to build programs from source (KILN_ELIMIT) once
 * `seconds` have passed (0: no limit) or while *stop is set (stop NULL: no
 * stop). Programs in memory or in the binary cache still load. A compile on
 * POCL takes 0.1-1.5 s and a model has dozens: a first `kiln tune --budget 30`
 * with an empty program cache spent 75 s compiling before its first trial. */
void kiln__device_limit_builds(kiln_device *d, double seconds, volatile const int *stop);
/* While defer is set, programs built from source skip the binary cache:
 * fetching a binary makes POCL generate code for every kernel of the
 * program, about half of a tuning candidate's compile, and most candidates
 * run a few times and are never used again. While save is set, a deferred
 * program whose kernel a launch asks for is stored then (the winners). */
void kiln__device_defer_binaries(kiln_device *d, bool defer, bool save);
/* Like kiln_cl_kernel for generated source text (fused kernels), found by
 * key, the source's hash from kiln_cl_src_key: callers keep it, because
 * hashing a 30 kB source per launch (conv.cl behind an epilogue) leaves the
 * device idle for tens of microseconds between a node's kernels. */
void kiln_cl_src_key(const char *src, char key[24]);
cl_kernel kiln_cl_kernel_src(kiln_device *d, const char *key, const char *src, const char *options, const char *name, kiln_error *err);
/* Source text of kernels/<file>: dir/<file> when dir (a kernel directory,
 * kiln_options.kernel_dir; NULL or "": none) has that file, then *owned
 * holds it too, for the caller to free (else *owned is NULL); else the
 * embedded copy. NULL when there is no such file. */
const char *kiln_cl_source_in(const char *dir, const char *file, char **owned);
/* The embedded copy (kiln_cl_source_in without a directory). */
const char *kiln_cl_source(const char *file, char **owned);
/* Enqueues a kernel over `dims` dimensions; lws may be NULL. Zero-size grids are skipped. */
int kiln_cl_launch(kiln_device *d, cl_kernel k, int dims, const size_t *gws, const size_t *lws, kiln_error *err);
/* Same, returning the launch's event in *ev (NULL when nothing was launched). */
int kiln_cl_launch_ev(kiln_device *d, cl_kernel k, int dims, const size_t *gws, const size_t *lws, cl_event *ev, kiln_error *err);
/* The local size kiln_cl_launch_ev gives a launch of k over gws when the
 * caller gives none (a CPU device: work-groups enough for its cores), in l;
 * false when it leaves the choice to the driver. */
bool kiln_cl_auto_lws(kiln_device *d, cl_kernel k, int dims, const size_t *gws, size_t *l);
/* Counts k's launch shape (gws rounded to lws) as launched before: its
 * first launch waits for no code generation. */
void kiln_cl_mark_launched(kiln_device *d, cl_kernel k, int dims, const size_t *gws, const size_t *lws);
/* Hex hash of the source of kernels/<files> as device d reads it (its
 * kernel directory; d NULL: embedded) (a comma list: the sources chained; a
 * single file hashes as itself). */
void kiln_source_hash(const kiln_device *d, const char *files, char *buf, size_t len);
/* The same for a kernel directory (NULL or "": the embedded sources). */
void kiln_source_hash_in(const char *dir, const char *files, char *buf, size_t len);
/* Sets kernel args: pairs of (size, pointer) terminated by size 0. */
int kiln_cl_args(cl_kernel k, kiln_error *err, ...);
/* clSetKernelArg, recorded for replay (replay.c): for arguments set outside kiln_cl_args. */
cl_int kiln_cl_arg(cl_kernel k, cl_uint idx, size_t sz, const void *p);

/* replay.c: a node's launches recorded on one run of a plan, replayed on the
 * next. kiln__rec_other: something enqueued that a replay would not repeat
 * (an upload, a copy, a read-back, a library's own launches); every enqueue
 * other than kiln_cl_launch_ev calls it. kiln__replay_stale: node n's
 * device state (param/scratch blocks, packed weights) changed, so its
 * recording no longer holds. */
void kiln__rec_arg(cl_kernel k, cl_uint idx, size_t sz, const void *p);
void kiln__rec_launch(cl_kernel k, int dims, const size_t *gws, const size_t *lws);
void kiln__rec_other(void);
struct kiln_exec;
int kiln__replay_begin(struct kiln_exec *x, kiln_node *n);
void kiln__replay_end(const struct kiln_exec *x, kiln_node *n, bool ok);
bool kiln__replay_ready(const struct kiln_exec *x, const kiln_node *n);
void kiln__replay_stale(kiln_node *n);
void kiln__replay_free(kiln_node *n);
#define KARG(x) sizeof(x), (const void *)&(x)
#define KEND ((size_t)0)
/* OpenCL C type name for a dtype ("float", "long", "uchar", ...), NULL if none. */
const char *kiln_cl_type(int dtype);
/* Build options "-DT=float -DT_IS_FLOAT=1 ..." for element type `dtype` into buf. */
const char *kiln_cl_type_opts(int dtype, char *buf, size_t len);
/* The OpenCL unsigned integer type of an element of `bytes` (1, 2, 4, 8:
 * uchar .. ulong; NULL otherwise): shuffle()'s mask element type. */
const char *kiln_cl_utype(size_t bytes);
cl_mem kiln_cl_alloc(kiln_device *d, size_t bytes, kiln_error *err);
int kiln_cl_write(kiln_device *d, cl_mem b, const void *src, size_t bytes, kiln_error *err);
int kiln_cl_read(kiln_device *d, cl_mem b, void *dst, size_t bytes, kiln_error *err);

/* ---- tunable kernels ---------------------------------------------------- */

/* A tunable parameter of a kernel family: its name (a -D define of the .cl
 * file), candidate values, and default. */
#define KILN_MAX_KPARAMS 12
typedef struct kiln_kparam {
  const char *name;
  int nvals;
  int vals[16];
  int dflt;
} kiln_kparam;

/* What the cost model reads about one candidate (all per launch set). */
typedef struct kiln_features {
  double flops;          /* arithmetic operations */
  double bytes;          /* global-memory bytes moved, given the tiling */
  double bytes_local;    /* local-memory bytes moved */
  double work_groups;
  double wg_size;        /* work-items per group */
  double vec;            /* vector width */
  double launches;       /* kernel launches */
  double footprint;      /* compulsory global traffic: every buffer's bytes once per write and once per first
                          * read, as if nothing re-read came from a cache (0: not given; bytes is then the
                          * only traffic figure) */
  double gathered;       /* elements copied by index arithmetic into another layout (im2col panels,
                          * Winograd tiles, packed operands): a cost of its own on CPUs */
  double strided;        /* elements read from rows a page or more apart, a few at a time (a GEMM's B
                          * operand read straight from a large image): at the probed gather rate, a
                          * cost the cost model's correction does not scale */
} kiln_features;

/* One kernel instance that can be tuned: its family, the exact instance key
 * (dtype, shape key, fused epilogue signature) and its parameter space. */
typedef struct kiln_tunable {
  const char *family;          /* e.g. "gemm", "conv" */
  const char *file;            /* kernels/<file> (a comma list when its kernels span files), hashed into records */
  int dtype;
  char shape_key[192];
  char epilogue[64];
  int nparams;
  kiln_kparam params[KILN_MAX_KPARAMS];
  int64_t dims[12];            /* family-specific sizes for valid/features */
  /* (optional) 0 if the parameter values p are valid for this instance on the
   * device; defaults to "valid". */
  int (*valid)(const struct kiln_tunable *t, const int *p, const kiln_device_info *d);
  /* (optional) cost-model features of candidate p; defaults to none. */
  void (*features)(const struct kiln_tunable *t, const int *p, kiln_features *f);
} kiln_tunable;

/* Valid candidates of t on a device, default first (malloc'd rows of
 * t->nparams ints in *out); returns the count. Where the descriptor's
 * defaults are not valid for t on dev, the valid candidate nearest to them
 * (fewest parameters changed) comes first instead. */
int kiln_tunable_enumerate(const kiln_tunable *t, const kiln_device_info *dev, int **out);
/* The parameters that run when nothing was tuned or predicted, into p
 * (t->nparams ints): the descriptor's defaults, or where they are invalid
 * for t on dev the first of kiln_tunable_enumerate. 0, or -1 when no vector
 * is valid (p then holds the defaults). */
int kiln_tunable_defaults(const kiln_tunable *t, const kiln_device_info *dev, int *p);

/* Cost-model state of a session (costmodel/): the device model and fitted
 * corrections. kiln_cm_choose picks the candidate with the lowest prediction. */
typedef struct kiln_cm_state kiln_cm_state;
/* The state for a session on device d: the figures of db's probe of the
 * device, else (db NULL, or no probe there) the quick probe's figures of d
 * from the user's cache (measured and cached on first use, probe_cache.c),
 * else the built-in prior's. NULL only when out of memory or no figures apply. */
kiln_cm_state *kiln_cm_state_for_device(struct kiln_db *db, int64_t device, kiln_device *d);
/* What the state's figures are (kiln_param_basis of include/kiln.h). */
void kiln_cm_state_basis(const kiln_cm_state *st, kiln_param_basis *b);
void kiln_cm_state_free(kiln_cm_state *st);
int kiln_cm_choose(kiln_cm_state *st, const kiln_tunable *t, int *p, double *pred_ns);
/* Probed launch overhead (us) and bandwidth (GB/s) for fusion decisions; 0
 * when they are this device's figures (else nothing is written). */
int kiln_cm_fusion_costs(const kiln_cm_state *st, double *launch_us, double *bw_gbps);
/* Time (ns) of t as a run would take it: the measured median of the
 * tuning record the run would use (*how = 2), else the prediction of
 * kiln_cm_choose's pick when t's family has a fitted correction (*how = 1),
 * else the base estimate of t's defaults (*how = 0). 0, or
 * KILN_EUNSUPPORTED when t has no features. */
int kiln_cm_predict_run(kiln_cm_state *st, const kiln_tunable *t, double *pred_ns, int *how);

/* A predictor of kernel times, which the session asks for the parameters
 * of instances nothing measured, for predicted times (attention fusion) and
 * for the device's launch and bandwidth figures (fusion decisions). The cost
 * model (costmodel/) is one: kiln_cm_predictor, handed to sessions by the
 * public kiln_session_create (costmodel/session_cm.c). Runtime calls only
 * through this table, so it links without the layers above it. */
typedef struct kiln_predictor {
  kiln_cm_state *(*open)(struct kiln_db *db, int64_t device, kiln_device *d); /* NULL: no figures apply */
  void (*close)(kiln_cm_state *st);
  void (*basis)(const kiln_cm_state *st, kiln_param_basis *b);
  int (*choose)(kiln_cm_state *st, const kiln_tunable *t, int *p, double *pred_ns);
  int (*fusion_costs)(const kiln_cm_state *st, double *launch_us, double *bw_gbps);
  int (*predict_run)(kiln_cm_state *st, const kiln_tunable *t, double *pred_ns, int *how);
} kiln_predictor;
extern const kiln_predictor kiln_cm_predictor; /* costmodel/costmodel.c */
/* A session whose parameters for what nothing measured come from pred
 * (NULL: descriptor defaults); kiln_session_create hands it the cost model. */
int kiln__session_create(kiln_model *m, kiln_device *d, const kiln_predictor *pred, kiln_session **out, kiln_error *err);
/* The session's tuning database, read through src (db/: kiln_db_records);
 * the public kiln_session_set_db (db/session_db.c) passes the database's own. */
struct kiln_record_source;
int kiln__session_set_db(kiln_session *s, kiln_db *db, const struct kiln_record_source *src, kiln_error *err);

/* Value of parameter `name` in the parameter vector p (or -1). */
int kiln_tunable_get(const kiln_tunable *t, const int *p, const char *name);
/* Appends " -DNAME=V" for every parameter to buf. */
void kiln_tunable_opts(const kiln_tunable *t, const int *p, char *buf, size_t len);
/* Canonical text "NAME=V,NAME=V" of p; and its parser (0 on success). */
void kiln_tunable_str(const kiln_tunable *t, const int *p, char *buf, size_t len);
int kiln_tunable_parse(const kiln_tunable *t, const char *s, int *p);

/* ---- execution context passed to `dev` functions ------------------------ */

struct kiln_db;
typedef struct kiln_exec {
  kiln_device *d;
  kiln_graph *g;
  int launches;             /* kernels enqueued in this run, one-time setup launches excluded */
  int setup_launches;       /* one-time launches (a constant operand packed on the first run) */
  struct kiln_db *db;       /* tuning records (optional), read through recs */
  const struct kiln_record_source *recs;
  int64_t db_device;        /* device row in db */
  const kiln_predictor *pred; /* with cm (optional): picks parameters nothing measured */
  kiln_cm_state *cm;
  /* tuner override: node index whose tunable params are forced to ov_params */
  int ov_node;
  const int *ov_params;
  /* profiling: when profile is set, launches append their events here */
  bool profile;
  cl_event *events;
  int nevents, capevents;
  size_t evict_bytes;       /* tuner: bytes overwritten before each timed run (0: none) */
  /* a session run under a memory budget: a node block (kiln_exec_param,
   * kiln_exec_scratch) that would exceed it first makes other kernels stream
   * (stream.c, kiln__stream_make_room); cur: the kernel being enqueued */
  struct kiln_session *budget_s;
  int cur;
} kiln_exec;

/* Parameters for node n's tunable kernel t: the tuner's override, else the
 * database's best record for this device, else the defaults. The choice is
 * cached on the node for the plan and its origin ("tuned", "default",
 * "override") kept in n->tparams_origin. */
const int *kiln_exec_tparams(kiln_exec *x, kiln_node *n, const kiln_tunable *t);

/* A read-only device buffer owned by node `n` in slot (0..3), filled with
 * `bytes` of `data` on first use and reused afterwards (shape metadata,
 * packed weights). Blocks up to 64 KiB are re-uploaded when their content
 * changes; larger ones only when their size changes, so within one plan a
 * large block must always hold the same data (use another slot otherwise).
 * Returns NULL and sets err on failure. */
cl_mem kiln_exec_param(kiln_exec *x, kiln_node *n, int slot, const void *data, size_t bytes, kiln_error *err);
/* A scratch device buffer owned by node `n` in slot (0..3), at least `bytes`. */
cl_mem kiln_exec_scratch(kiln_exec *x, kiln_node *n, int slot, size_t bytes, kiln_error *err);
/* Launch through the exec context (counts launches). */
int kiln_exec_launch(kiln_exec *x, cl_kernel k, int dims, const size_t *gws, const size_t *lws, kiln_error *err);
/* The same for a launch that later runs of the plan do not repeat (packing a
 * constant operand): counted in setup_launches, so that the launches per run
 * are the same for every run of a plan. */
static inline int kiln_exec_launch_setup(kiln_exec *x, cl_kernel k, int dims, const size_t *gws, const size_t *lws, kiln_error *err) {
  kiln__rec_other(); /* a run that packs is not one to replay */
  int rc = kiln_exec_launch(x, k, dims, gws, lws, err);
  if (!rc) { x->launches--; x->setup_launches++; }
  return rc;
}
/* Node n's recorded launches again (kiln__replay_ready(n) true). */
int kiln__replay_run(kiln_exec *x, kiln_node *n, kiln_error *err);
/* Device buffer of input/output slot i (NULL if omitted). For a constant input
 * the executor has uploaded its data. */
static inline cl_mem kiln_in_buf(kiln_exec *x, const kiln_node *n, int i) { return kiln_has_in(n, i) ? x->g->vals[n->in[i]].buf : NULL; }
static inline cl_mem kiln_out_buf(kiln_exec *x, const kiln_node *n, int i) { return kiln_has_out(n, i) ? x->g->vals[n->out[i]].buf : NULL; }

/* Tuner measurement primitives (tuner/tuner.c), shared with tuner/verify.c:
 * one run of node n with x's override, timed as the span of its profiling
 * events (ns, or a negative status); and the normalized max error of n's
 * device outputs against host reference outputs ref[value] (INFINITY on
 * NaN/Inf where the reference is finite). */
double kiln__tune_run_once(kiln_exec *x, kiln_node *n, kiln_error *err);
double kiln__tune_output_error(kiln_exec *x, kiln_node *n, void **ref, kiln_error *err);
/* Candidates p[0..k) of node n timed back to back in alternating rounds
 * (tuner/tuner.c): med, mn, spread ((p90 - p10) / median, or NULL) and cnt
 * (or NULL) per candidate; < 0 when none of its runs succeeded. Short rounds
 * dominated by noise are timed again (up to 3 times); returns 1 when the
 * rounds kept are still noise-dominated (a typical time over 1.5x the
 * fastest), else 0. */
int kiln__tune_time_together(kiln_exec *x, kiln_node *n, int node, const int *const *p, int k, int reps, double *med, double *mn, double *spread,
                             int *cnt);

/* ---- op registry -------------------------------------------------------- */

/* One ONNX operator. Functions receive the graph (shapes of inputs are set
 * and, where known at plan time, their host data in vals[].data).
 *   infer: sets every output's dtype and shape (kiln_set_out). Returns 0, or
 *          KILN_EUNSUPPORTED / KILN_ESHAPE with a message naming the node.
 *   ref:   (CPU reference) computes outputs from inputs. in[i]/out[i] are host
 *          buffers laid out row-major per the values' shapes; in[i] is NULL
 *          for an omitted optional input, out[i] NULL for an omitted output.
 *   dev:   enqueues OpenCL kernels computing outputs from the inputs' device
 *          buffers (kiln_in_buf/kiln_out_buf). (optional) NULL means the op
 *          cannot run on the device; it can still be folded at plan time.
 *   dev_check: (optional) returns 0 if `dev` handles this node's dtypes and
 *          attributes, else KILN_EUNSUPPORTED with the reason in err.
 *          Defaults to "supported" when dev is set. */
typedef struct kiln_op_def {
  const char *name;
  int (*infer)(kiln_graph *g, kiln_node *n, kiln_error *err);
  int (*ref)(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err);
  int (*dev)(kiln_exec *x, kiln_node *n, kiln_error *err);
  int (*dev_check)(kiln_graph *g, kiln_node *n, kiln_error *err);
  /* (optional) describes the node's tunable kernel; returns 0 and fills t, or
   * nonzero when the node has nothing to tune. Defaults to "nothing". */
  int (*tunable)(kiln_graph *g, kiln_node *n, kiln_tunable *t);
  /* (optional) KILN_OP_* hints for the memory planner; defaults to 0. */
  unsigned flags;
  /* (optional) releases what n->state holds beyond plain memory (the device
   * sessions of a control-flow node's bodies) before it is freed. */
  void (*release)(kiln_node *n);
  /* (optional, KILN_OP_DYNAMIC) after `dev` ran: reads back how many rows
   * output 0 has (at most the planned count) and sets its dims[0]. */
  int (*resolve)(kiln_exec *x, kiln_node *n, kiln_error *err);
} kiln_op_def;

/* Output 0 holds exactly input 0's bytes (Reshape, Flatten, Squeeze,
 * Unsqueeze, Identity): when input 0 dies at this node the output takes its
 * buffer and `dev` is not called. */
#define KILN_OP_ALIAS 1u
/* `dev` is correct when output 0 shares input 0's buffer (same shape and
 * type): every work-item reads its own element of input 0 before writing the
 * same element of output 0 and nothing else. */
#define KILN_OP_INPLACE 2u
/* Output 0's leading dimension depends on the data (NonMaxSuppression):
 * planned at its upper bound; `resolve` (device) or `ref` (host) sets the
 * actual count, and the nodes after it are inferred again on the smaller
 * shape (kiln__reinfer_after), their buffers being large enough. */
#define KILN_OP_DYNAMIC 4u
/* `dev` (and `tunable`) handle fp16 storage of the node's float tensors
 * (kiln_dev_dtype), computing in fp32: an fp16 plan stores them as half. */
#define KILN_OP_HALF 8u
/* With KILN_OP_HALF: the op moves enough data (norms, softmax, reductions,
 * attention) that an fp16 plan converts fp32 inputs to run it in half;
 * element-wise and movement ops run in half only when a float input already
 * is (precision.c). */
#define KILN_OP_HALF_GAIN 16u
/* Output 0 is the inputs laid end to end along attribute "axis" (Concat): the
 * memory planner may give the inputs sub-buffers of the output so that the
 * node copies nothing (session.c, concat_slices). */
#define KILN_OP_CONCAT 32u
/* The op's kernel can apply a fused element-wise epilogue (kiln_epi_kernel,
 * fusion.c): nodes after it on its output's shape run inside its kernel. The
 * epilogue's per-channel operands run along axis 1 with KILN_OP_EPI_NCHW
 * (Conv), else along the last axis (Gemm, MatMul; output rank >= 2). */
#define KILN_OP_EPI_HEAD 64u
#define KILN_OP_EPI_NCHW 128u
/* Shape inference again for nodes after..nnodes-1 (after a KILN_OP_DYNAMIC
 * node settled its output); fails if a value would outgrow its plan. */
int kiln__reinfer_after(kiln_graph *g, int after, kiln_error *err);

/* Each op file exports a table terminated by {NULL}; op_registry.c lists them. */
const kiln_op_def *kiln_op_lookup(const char *domain, const char *op_type);

/* ---- fusion (fusion.c) -------------------------------------------------- */

#define KILN_EPI_SLOTS 4 /* kernel sources that take a fused epilogue (kernels/family.h) */
typedef struct kiln_fgroup {
  int nnodes;
  int *nodes;                /* node indices in topological order; the last is the root */
  int next;
  int ext[8];                /* external input values (epilogues: the buffers e0, e1) */
  char *src;                 /* generated OpenCL source (epilogues: the function kiln_epi) */
  /* epilogue groups: nodes[0] is the head (Conv, Gemm, MatMul) whose kernel
   * applies the element-wise rest to each output before storing it */
  int head;                  /* node index of the head, -1 for element-wise groups */
  char sig[64];              /* epilogue signature: part of the head's kernel instance key */
  bool nofull;               /* epilogue groups: no operand of the output's size (KILN_EPI_NOFULL): its kiln_epir runs on channel vectors */
  char src_key[24];          /* kiln_cl_src_key(src) */
  char *full_src[KILN_EPI_SLOTS]; /* kiln_epi + a family's source (slot: kiln_family_epi_slot), built on first use */
  char full_key[KILN_EPI_SLOTS][24]; /* kiln_cl_src_key(full_src[i]) */
} kiln_fgroup;

/* One grouping considered: taken or rejected, with the numbers that decided. */
typedef struct kiln_fusion_decision {
  char root[128];            /* the group's last node */
  char nodes[256];           /* "Add+Relu" */
  const char *kind;          /* "elementwise", "epilogue", "im2col" */
  int nnodes;
  bool fused, measured;      /* measured: predictions from the device's probe */
  double pred_fused_ns, pred_unfused_ns;
  char reason[192];
  char sig[96];              /* subgraph signature (kind, ops, shapes, attributes); "" when not measurable */
  int first_node, last_node; /* node index range the grouping's members span */
  double meas_fused_ns, meas_unfused_ns; /* recorded by `kiln tune` for this device; <= 0 when none */
  /* attention (a rewrite of the graph, passes.c): the members' node names,
   * each followed by '\n' (the fused kernel keeps the Softmax's name); what
   * fusion_tune times in either plan */
  char members[512];
} kiln_fusion_decision;

typedef struct kiln_fusion_costs {
  bool probed;
  double launch_us, bw_gbps;
  /* recorded measurements of a grouping (kiln tune): 0 and both times (ns)
   * when the database holds them for this device, else nonzero */
  int (*lookup)(void *ctx, const char *sig, double *fused_ns, double *unfused_ns);
  void *lookup_ctx;
  /* the tuner's override: the grouping with this signature is fused
   * (force_fused) or not, whatever was predicted or recorded */
  const char *force_sig;
  int force_fused;
  int force_attention;     /* KILN_FUSE_AUTO (the prediction decides), _ALWAYS, _NEVER (kiln_options.attention_fuse) */
} kiln_fusion_costs;

/* A grouping's final choice: the tuner's force, else recorded measurements
 * (both variants), else the prediction pred_fused. Fills d->meas_* and,
 * when measurements decided, d->reason. */
bool kiln__fusion_choose(const kiln_fusion_costs *c, kiln_fusion_decision *d, bool pred_fused);
/* Signature of a grouping of nodes[0..n) (kind, op types, input shapes,
 * attributes) into buf (<= 96 bytes). */
void kiln__fusion_sig(kiln_graph *g, const char *kind, const int *nodes, int n, char *buf, size_t len);

/* Chooses fusion groups over a planned graph (sets fuse_root / fgroup);
 * *decisions (malloc'd) lists every candidate grouping. */
int kiln_fusion_plan(kiln_graph *g, const kiln_fusion_costs *costs, kiln_fusion_decision **decisions, int *ndec, kiln_error *err);
/* Enqueues a group's fused kernel (called for the root node). */
int kiln_fusion_run(kiln_exec *x, kiln_node *root, kiln_error *err);
void kiln_fusion_free(kiln_graph *g);
/* Enqueues whatever node n contributes to a run: its `dev`, its group's fused
 * kernel when n is a group's root, nothing for a fused group's other members. */
int kiln_node_dev(kiln_exec *x, kiln_node *n, kiln_error *err);
/* Epilogue support for the head kernels (conv.cl, gemm.cl):
 * kiln_epi_kernel: kernel `name` of `file` built with opts, with the node's
 *   epilogue function compiled in (-DKILN_EPI) when n->epi is set;
 * kiln_epi_out: the buffer the head writes (the group root's output when
 *   fused, else the node's own output 0);
 * kiln_epi_bufs: the epilogue's tensor operands e0, e1 (`fallback` where unused). */
cl_kernel kiln_epi_kernel(kiln_exec *x, kiln_node *n, const char *file, const char *opts, const char *name, kiln_error *err);
cl_mem kiln_epi_out(kiln_exec *x, kiln_node *n);
void kiln_epi_bufs(kiln_exec *x, kiln_node *n, cl_mem fallback, cl_mem e[2]);
/* The node whose outputs hold n's results: the epilogue group's root for a
 * head, else n itself. */
kiln_node *kiln_epi_result_node(kiln_graph *g, kiln_node *n);
/* A 1x1 Conv whose untuned default is im2col + GEMM (the copy pads the
 * columns or gathers a stride): predicted time of that copy path
 * (*copy_ns: one more launch, the copy's traffic) against the GEMM reading
 * the input itself (*direct_ns: gathered columns cost a cache line each per
 * block of output channels), counted with bandwidth bw_gbps and launch_ns.
 * Returns 0 when the choice applies to node n, else nonzero. */
int kiln__conv_im2col_costs(kiln_graph *g, kiln_node *n, double bw_gbps, double launch_ns, double *copy_ns, double *direct_ns, char *why, size_t len);
/* Host reference of a head's epilogue (tuner): runs the group's other nodes
 * on host[] after the head's reference, reading their external inputs from
 * the device. No-op for nodes without an epilogue. */
int kiln_epi_ref(kiln_device *d, kiln_graph *g, kiln_node *n, void **host, kiln_error *err);

/* ---- graph and plan ----------------------------------------------------- */

int kiln_graph_add_value(kiln_graph *g, const char *name);   /* returns id or -1 */
int kiln_graph_find_value(const kiln_graph *g, const char *name);
void kiln_graph_free(kiln_graph *g);
/* Frees what node n owns (strings, inputs and outputs, attributes, state);
 * not its device buffers. */
void kiln__node_free_fields(kiln_node *n);
/* Frees node n's attributes (leaves it with none). */
void kiln__node_free_attrs(kiln_node *n);
/* Orders g's nodes so every producer precedes its consumers, keeping the
 * given order where it is valid; KILN_EPARSE "the <what> has a cycle
 * through node ..." (onnx_load.c). */
int kiln__graph_toposort(kiln_graph *g, const char *what, kiln_error *err);
/* Writes the ONNX graph gp (an Onnx__GraphProto) as a model of opset opset
 * (default domain), IR version 8, to path (demo.c). */
struct Onnx__GraphProto;
int kiln__onnx_write_graph(const char *path, struct Onnx__GraphProto *gp, int64_t opset, const char *producer, kiln_error *err);
/* Fills tp as a tensor type of element type elem (ONNX numbering) and the
 * static shape dims[0..rank), in the caller's tt, sh and rank dimensions
 * dv with their pointers dp (demo.c); returns tp. */
struct Onnx__TypeProto;
struct Onnx__TypeProto__Tensor;
struct Onnx__TensorShapeProto;
struct Onnx__TensorShapeProto__Dimension;
struct Onnx__TypeProto *kiln__onnx_tensor_type(int elem, int rank, const int64_t *dims, struct Onnx__TypeProto *tp, struct Onnx__TypeProto__Tensor *tt,
                                               struct Onnx__TensorShapeProto *sh, struct Onnx__TensorShapeProto__Dimension *dv,
                                               struct Onnx__TensorShapeProto__Dimension **dp);
/* Loads an ONNX file into a graph (no shape inference yet). */
int kiln_onnx_load(const char *path, uint64_t max_bytes, kiln_graph **out, kiln_error *err);
/* Same from a serialized ModelProto in memory (len bytes, not kept; refused
 * above max_bytes, 0 = 4 GiB). External data is read from base_dir (NULL:
 * "."); messages name the model "<memory>" and the graph's path is NULL. */
int kiln_onnx_load_buffer(const void *buf, size_t len, const char *base_dir, uint64_t max_bytes, kiln_graph **out, kiln_error *err);
/* Parses a TensorProto from memory into a host tensor; base_dir resolves external data. */
int kiln_tensor_from_proto(const void *proto, const char *base_dir, kiln_tensor **out, kiln_error *err);
/* Parses a .npy or TensorProto (.pb) file's contents (len bytes, not kept),
 * chosen by content, into *out (caller frees). `name` is the file name used
 * in messages; external data of a .pb resolves against its directory. */
int kiln__tensor_parse(const void *buf, size_t len, const char *name, kiln_tensor **out, kiln_error *err);

/* precision.c: makes g's device storage follow `precision` (KILN_PRECISION_*)
 * after kiln_graph_plan and the pattern passes: chooses each node's
 * precision, marks half values and inserts KilnCast nodes where storages
 * meet (an fp32 plan removes those of an earlier one). *changed is set when
 * nodes were inserted or removed: the graph must be planned again. */
int kiln__precision_apply(kiln_graph *g, int precision, bool *changed, kiln_error *err);
/* Reads v's device buffer into dst in v's host layout (half converted to
 * float); writes v's host data (float converted to half) into its buffer,
 * blocking when converting. */
int kiln__value_read(kiln_device *d, const kiln_value *v, void *dst, kiln_error *err);
/* layout.c: marks the values stored in blocks of B channels (kiln_value.blk)
 * once the fusion groups are planned; B 0 clears every mark. *nblocked: how
 * many. lc (may be NULL): wino(ctx, n) tells whether Conv node n would run
 * Winograd in NCHW on many channels; without it only regions around depthwise convolutions
 * are blocked. */
typedef struct kiln_layout_ctx {
  void *ctx;
  bool (*wino)(void *ctx, kiln_node *n);
} kiln_layout_ctx;
int kiln__layout_plan(kiln_graph *g, int B, const kiln_layout_ctx *lc, int *nblocked);
/* Whether Conv node n is one that Winograd serves better in NCHW than dirc
 * in blocks: a Winograd-eligible 3x3 of 256 input channels or more on a
 * plane of 16x16 or more (kernels/conv.c; by shape, so that a database
 * does not change the plan it was tuned on). */
bool kiln__conv_nchw_wino(kiln_exec *x, kiln_node *n);
int kiln__value_upload(kiln_device *d, const kiln_value *v, kiln_error *err);
/* float <-> IEEE half (round to nearest even) (util.c). */
uint16_t kiln__f2h(float f);
float kiln__h2f(uint16_t h);

/* Load-time graph rewrites (Gradient expansion). */
int kiln_graph_rewrite(kiln_graph *g, kiln_error *err);
/* Plan-time rewrites of a planned graph (passes.c): the exported GroupNorm
 * pattern into one GroupNormalization, activations into the normalization
 * before them, scale and mask into Softmax. Counts of each into the
 * (optional) out-parameters; 0 or a status. */
int kiln_graph_fuse_patterns(kiln_graph *g, int *ngroupnorm, int *nact, int *nsoftmax, kiln_error *err);
/* Plan-time attention rewrite (passes.c, after kiln_graph_fuse_patterns):
 * MatMul(Q, K^T) -> Softmax over the last axis (with its folded scale and
 * mask) -> MatMul(., V), with the Transposes that feed Q, K^T, V alone and
 * one that reads the result alone, becomes one KilnAttention node when cm
 * (NULL: counted traffic and launches with costs) predicts it faster; every
 * candidate is recorded in g->pdec, fused or rejected. KILN_ATTENTION_FUSE=0/1
 * forces the choice (experiments). Count of rewrites into *nfused. */
int kiln_graph_fuse_attention(kiln_graph *g, const kiln_predictor *pred, kiln_cm_state *cm, const kiln_fusion_costs *costs, int *nfused,
                              kiln_error *err);
/* Binds input shapes (and, for small integer inputs, values) and runs shape
 * inference and constant folding over the graph. */
int kiln_graph_plan(kiln_graph *g, kiln_error *err);
/* Runs node n's reference on host data of the graph's values (allocating outputs). */
int kiln_node_run_ref(kiln_graph *g, kiln_node *n, kiln_error *err);
/* Same, with host[v] as the buffer of value v (NULL entries use vals[v].data);
 * outputs are stored in host[]. */
int kiln_node_run_ref_host(kiln_graph *g, kiln_node *n, void **host, kiln_error *err);

struct kiln_session {
  kiln_model *m;
  kiln_device *d;
  kiln_tensor **in;        /* per graph input, owned */
  kiln_tensor **out;       /* per graph output, owned */
  bool planned;
  kiln_run_stats st;
  struct kiln_seq_io *sio; /* sequence-typed inputs and outputs (seq_io.c), NULL when none were used */
  bool bind_floats;        /* small float inputs are bound by value too */
  bool lazy_int_bind;      /* (control-flow bodies) small integer inputs are bound by value only once a plan */
  bool bind_ints;          /* failed without their values: a loop's counter or token does not re-plan each iteration */
  kiln_db *db;             /* tuning records, not owned; NULL = defaults */
  const struct kiln_record_source *recs; /* how db is read */
  int64_t db_device;
  const kiln_predictor *pred; /* asked for what nothing measured (NULL: descriptor defaults) */
  kiln_cm_state *cm;       /* owned, made by pred at plan time; NULL when no figures apply */
  bool no_fusion;          /* --no-fusion */
  int precision;           /* KILN_PRECISION_* (--precision) */
  kiln_fusion_decision *fdec;
  int nfdec;
  const char *force_sig;   /* tuner: force this grouping fused (force_fused) or not in the next plan */
  int force_fused;
  int64_t *ev_lo, *ev_hi;  /* profile: per node, first start and last end (ns) of its kernels in the last run */
  bool profile;
  /* plans for other input-shape sets, kept for when those shapes come back
   * (plan_cache.c); the current plan is m->g with the fields above */
  struct kiln_plan_entry *pc;
  int npc;
  uint64_t pc_tick;        /* LRU clock */
  int plans_built;         /* plans made in this session (kiln_run_stats.plans_built) */
  uint64_t max_memory;     /* kiln_session_set_max_memory: 0 = no limit */
  uint64_t stream_window;  /* stream.c: the most one streamed kernel held (measured) */
  uint64_t stream_run_bytes; /* uploaded by streaming in the current run */
  uint64_t stream_peak_plan; /* the plan's predicted peak (resident + largest streamed kernel) */
  uint64_t stream_live;    /* weights uploaded for the streamed kernel being enqueued */
  uint64_t stream_peak_run; /* the most held at once in the current run (resident, node blocks, live) */
};
/* Weight streaming under a memory budget (stream.c). */
void kiln__stream_mark(kiln_graph *g, uint64_t max_memory);
int kiln__stream_plan(kiln_session *s, kiln_error *err);
int kiln__stream_before(kiln_session *s, int e, kiln_error *err);
void kiln__stream_after(kiln_session *s, int e);
void kiln__stream_tighten(kiln_session *s);
void kiln__stream_make_room(kiln_session *s, int cur, uint64_t bytes);
uint64_t kiln__stream_node_bytes(const kiln_graph *g);
/* Sequence-typed graph inputs and outputs (seq_io.c): at plan time, each
 * sequence input's items become values of their own ("name[i]", inputs
 * with host data) listed by the input's kiln_seq; before a run they are
 * uploaded; after a run (host NULL) or a reference run (host[] the values'
 * host buffers) sequence outputs are gathered into the session. */
int kiln__seq_bind(kiln_session *s, kiln_error *err);
int kiln__seq_upload(kiln_session *s, kiln_error *err);
int kiln__seq_collect(kiln_session *s, void **host, kiln_error *err);
bool kiln__seq_is_input(const kiln_session *s, int i);
void kiln__seq_clear_input(kiln_session *s, int i); /* input i is a tensor again */
/* Sequence item `it` as a new host tensor, copied from src (the whole
 * source value's bytes), or shaped only when src is NULL. */
kiln_tensor *kiln__seq_item_tensor(kiln_graph *g, const kiln_seq_item *it, const void *src);
void kiln__seq_free(kiln_session *s);
/* o becomes a sequence value listing the same items as sq (planning an op
 * that passes a sequence through). */
int kiln__seq_copy(kiln_value *o, const kiln_seq *sq, kiln_error *err);

/* At most this many plans (input-shape sets) per session, the current one
 * included; the least recently used is dropped (its device buffers freed). */
#define KILN_PLAN_CACHE_MAX 8
/* plan_cache.c: makes the plan for the session's bound inputs current: keeps
 * it, swaps in a cached plan that matches, or plans (a plan for other shapes
 * is kept for later). matches(s) says whether the current plan fits. */
int kiln__plan_cache_ensure(kiln_session *s, bool (*matches)(kiln_session *), int (*plan)(kiln_session *, kiln_error *), kiln_error *err);
/* Drops every cached plan but the current (its parameters went stale). */
void kiln__plan_cache_clear(kiln_session *s);
/* session.c: releases the current plan's device buffers and state. */
void kiln__session_release_plan(kiln_session *s);
/* session.c: a new copy of the model's graph as loaded (shape bindings
 * applied, nothing planned), read again from its file; KILN_EUNSUPPORTED
 * when the model came from memory. */
int kiln__model_fresh_graph(kiln_model *m, kiln_graph **out, kiln_error *err);
/* kiln tune's measurement of close fusion calls (tuner/fusion_tune.c):
 * appends one result per grouping measured. */
int kiln__tune_fusion(kiln_session *s, struct kiln_db *db, double close, kiln_tune_result **res, int *nres, kiln_error *err);
/* How many groupings of the current plan kiln__tune_fusion would measure
 * (*attention: how many of them attention groupings). */
int kiln__fusion_pending(const kiln_session *s, double close, int *attention);
/* Plans again at the next run (after changing force_sig). */
void kiln__session_replan(kiln_session *s);
/* Plans again at the next run on a new copy of the model's graph (the
 * attention rewrite changes the graph itself, so a replan in place cannot
 * undo it); the current plan and its graph are released. KILN_EUNSUPPORTED
 * for a model from memory or a file changed since it was loaded. */
int kiln__session_replan_fresh(kiln_session *s, kiln_error *err);
/* Plans the session for its bound inputs if needed (tuner use). */
int kiln__session_ensure_plan(kiln_session *s, kiln_error *err);

struct kiln_model {
  kiln_graph *g;
  kiln_load_options opt;
  kiln_shape_binding *shapes;
  int nshapes;
  /* inputs as declared (after shape bindings): rank and dims (-1 free),
   * whatever shapes a plan bound since */
  int *decl_rank;
  int64_t (*decl_dims)[KILN_MAX_RANK];
  /* the file as loaded (size, mtime): plans for new shapes read it again
   * only while it is unchanged */
  int64_t file_size, file_mtime_ns;
};

#endif /* KILN_INTERNAL_H */
