/* kernels/family.h: the registry of kernel families (kernels/family.c).
 *
 * A kernel family is a set of OpenCL sources (kernels/<file>.cl) and, when
 * it is tunable, the host description of its parameter space: the -D
 * parameters with their candidate values and defaults, valid() and
 * features() of a candidate, and its solvers (the algorithms a value of the
 * family's selector parameter picks: gemm's KERNEL, conv's CONV_ALGO, norm's
 * NORM_BLK; a family without a selector is one solver). Each tunable family
 * lives beside its source (kernels/gemm.c next to kernels/gemm.cl, ...);
 * op files (runtime/ops/) state the problem (kiln_family_begin, then the
 * instance's shape key and dims) and run the solver the parameters pick.
 * The tests (tests/family_params.c, gemm_params.c, conv_params.c), the
 * Oclgrind runs (tests/oclgrind.sh, registered per family by
 * tests/families.c) and the fused epilogues (runtime/fusion.c) read this
 * registry; adding a family is its descriptor plus one line in
 * kiln_families[]. */
#ifndef KILN_KERNELS_FAMILY_H
#define KILN_KERNELS_FAMILY_H
#include "kiln_internal.h"

/* One algorithm of a family. Solver structs of a family may extend this
 * one (it is then their first member, see kiln_conv_solver). */
typedef struct kiln_solver {
  const char *name;
  unsigned uses;   /* bit i: reads parameter i (~0u: all) */
  int select;      /* the selector parameter's value that picks it (-1: the family has no selector) */
} kiln_solver;

typedef struct kiln_family {
  const char *name;        /* kiln_tunable.family ("" for a kernel group with nothing to tune) */
  const char *file;        /* kernels/ sources, a comma list; hashed into tuning records */
  const char *oclgrind;    /* the tests/oclgrind.sh family that runs its kernels (NULL: the first listed with its file) */
  int nparams;             /* 0: not tunable */
  const kiln_kparam *params;
  int selector;            /* the parameter that picks a solver, -1: none */
  const void *solvers;     /* nsolvers structs of solver_size bytes, each starting with a kiln_solver */
  int nsolvers;
  size_t solver_size;
  int epilogue;            /* 1: its kernels call kiln_epi (fused element-wise tails, runtime/fusion.c) */
  int (*valid)(const kiln_tunable *t, const int *p, const kiln_device_info *d);
  void (*features)(const kiln_tunable *t, const int *p, kiln_features *f);
  /* (optional) the instance's defaults, from its dims (after the op set them) */
  void (*defaults)(kiln_tunable *t);
} kiln_family;

/* The solver fields of a descriptor, from an array of solver structs. */
#define KILN_SOLVERS(a) .solvers = (a), .nsolvers = (int)(sizeof(a) / sizeof((a)[0])), .solver_size = sizeof((a)[0])

/* The registry: every kernel source belongs to one entry (kernels of no
 * tunable family are listed too, so the Oclgrind runs cover them). */
extern const kiln_family *const kiln_families[];
extern const int kiln_nfamilies;

/* The tunable family named `name`, or NULL. */
const kiln_family *kiln_family_find(const char *name);
/* Solver i of f. */
const kiln_solver *kiln_family_solver(const kiln_family *f, int i);
/* The index of the solver the parameters p pick (0 without a selector), -1 if none. */
int kiln_family_solver_of(const kiln_family *f, const int *p);
/* Starts the descriptor t of an instance of f with element type dtype: family,
 * file, parameters with the family's defaults, valid and features. */
void kiln_family_begin(const kiln_family *f, int dtype, kiln_tunable *t);
/* Completes t once its dims are set: the instance's defaults (f->defaults). */
void kiln_family_end(const kiln_family *f, kiln_tunable *t);
/* Appends "<op>:<tag>=AxBxC" (dims of v) to a shape key; returns its length. */
int kiln_family_key_dims(char *key, size_t len, int o, const char *tag, const kiln_value *v);
/* The slot of kernels/<file> among the sources that take an epilogue (a
 * family with epilogue = 1, at most KILN_EPI_SLOTS), -1 for none. */
int kiln_family_epi_slot(const char *file);

/* ---- the families' parameter vectors and instance dims (kiln_tunable.dims) ---- */

/* gemm (kernels/gemm.c): solvers KERNEL = 0 tiled, 1 panel, 2 CLBlast */
enum { GP_KERNEL, GP_TM, GP_NV, GP_VW, GP_WGM, GP_WGN, GP_KWI, GP_SA, GP_KWG, GP_MB, GP_AP, GP_COUNT };
enum { GK_TILED = 0, GK_PANEL = 1, GK_CLBLAST = 2 };
enum { GD_M, GD_N, GD_K, GD_BATCH, GD_NBZ, GD_BCONST, GD_ESIZE, GD_KMASK };
extern const kiln_kparam kiln_gemm_params[GP_COUNT];
extern const kiln_family kiln_family_gemm;

/* norm (kernels/norm.c): norm.cl's norm_rows; solvers NORM_BLK = 0 cyclic, 1 block */
#define KILN_NORM_WG 64 /* NORM_WG, the work-group of a row when there are few rows */
enum { NP_WG, NP_VW, NP_BLK, NP_COUNT };
enum { ND_ROWS, ND_L, ND_CONTIG, ND_ESIZE, ND_AFFINE };
extern const kiln_family kiln_family_norm;

/* reduce, softmax (kernels/reduce.c): line reductions of reduce.cl */
#define KILN_RD_WG 64 /* work-group size of the *_wg kernels; matches RD_WG in reduce.cl */
enum { LP_WG, LP_VW, LP_COUNT };
#define KILN_RD_WG_MIN_REDUCE 256  /* reductions of at least this many elements use reduce_wg */
#define KILN_RD_WG_MIN_SOFTMAX 256 /* softmax lines of at least this length use softmax_wg */
enum { LD_LINES, LD_LEN, LD_CONTIG, LD_ESIZE, LD_PASSES };
/* The default WG and VW of `lines` lines of `len` elements (contig: unit
 * stride), lines of at least min_wg elements taking a work-group. */
void kiln_lines_default(int64_t lines, int64_t len, bool contig, int64_t min_wg, int *wg, int *vw);
extern const kiln_family kiln_family_reduce, kiln_family_softmax;

/* pool, gpool (kernels/pool.c): pool.cl's windowed and global pools */
enum { PP_A, PP_B, PP_C, PP_COUNT }; /* pool: PL_WPI, PL_WG, PL_ROWS; gpool: PL_WG, PL_VW */
enum { PD_PLANES, PD_OUT, PD_IN, PD_WIN, PD_ESIZE, PD_FLOAT, PD_OW, PD_OH }; /* PD_OW: the output row width when pool_row runs (else 0) */
extern const kiln_family kiln_family_pool, kiln_family_gpool;

/* eltwise (kernels/elementwise.c): elementwise.cl's unary, clip and broadcast kernels */
enum { EP_WPI, EP_WG, EP_COUNT };
#define KILN_EW_WPI 16 /* EW_WPI's default in elementwise.cl */
enum { ED_TOTAL, ED_INNER, ED_BYTES, ED_LAUNCHES };
extern const kiln_family kiln_family_eltwise;

/* attention (kernels/attention.c): attention.cl; solvers ATT_ALGO = 0 rows, 1 blocked */
enum { AP_ALGO, AP_QR, AP_KB, AP_VW, AP_DVS, AP_WG, AP_BQ, AP_BK, AP_COUNT };
enum { AA_ROWS = 0, AA_BLOCKED = 1 };
enum { AD_BATCH, AD_S, AD_SKV, AD_D, AD_DV, AD_UNIT, AD_MASK, AD_ESIZE };
extern const kiln_family kiln_family_attention;

/* conv (kernels/conv.c, conv.h) */
extern const kiln_family kiln_family_conv;
#endif
