/* ops/window.h: the window geometry shared by Conv, ConvTranspose and the
 * pools (runtime/ops/conv_pool.c) and the conv family's solvers
 * (kernels/conv.c). */
#ifndef KILN_OPS_WINDOW_H
#define KILN_OPS_WINDOW_H
#include "kiln_internal.h"

/* The kernels see three spatial dims; 1-D and 2-D ops are right-aligned into
 * them with leading dims of size 1 (kernel 1, stride 1, dilation 1, pad 0). */
#define SP 3

enum { WIN_CONV, WIN_CONVT, WIN_POOL, WIN_GLOBAL };

typedef struct {
  int nsp;                                  /* spatial dims of the tensors (1..3) */
  int64_t n, c, oc, group;                  /* batch, input channels, output channels, groups */
  int64_t in[SP], out[SP], k[SP], s[SP], d[SP], pb[SP], pe[SP];
} win_geom;

static inline int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

/* Reads the geometry of a Conv / ConvTranspose / pooling node (kind WIN_*)
 * from its input shapes and attributes and computes the output spatial size. */
int kiln__win_setup(kiln_graph *g, kiln_node *n, int kind, win_geom *w, kiln_error *err);
/* Geometry for the kernels: the first nm of the 27 values that M_* in
 * conv.cl and pool.cl's header index. */
int kiln__win_meta(const win_geom *w, cl_int *m, int nm, kiln_error *err);

/* The conv family (kernels/conv.c): the tunable description of a Conv node
 * with geometry w (nonzero when there is nothing to tune), and the run of
 * the solver its parameters name. */
int kiln__conv_tunable_of(kiln_graph *g, kiln_node *n, const win_geom *w, kiln_tunable *t);
int kiln__conv_run(kiln_exec *x, kiln_node *n, const win_geom *w, kiln_error *err);
/* What Conv node n can do with blocked values (runtime/layout.c), bits of
 * KILN_BLK_*: 0 for anything else (a node that is not a float Conv with
 * constant weights, in fp16 storage, 3-D, ...). */
enum { KILN_BLK_DW = 1, KILN_BLK_WRITE = 2, KILN_BLK_READ = 4 };
int kiln__conv_blk_roles(kiln_graph *g, kiln_node *n);
/* Whether MaxPool node n can read and write its values in blocks
 * (pool.cl's pool_blk): a 2-D max pool without the indices output. */
int kiln__pool_blk_ok(kiln_graph *g, kiln_node *n);
#endif
