/* kernels/conv.h: the conv family's parameters and its registry of solvers
 * (kernels/conv.c), for the op (runtime/ops/conv_pool.c) and the tests. */
#ifndef KILN_KERNELS_CONV_H
#define KILN_KERNELS_CONV_H
#include "family.h"

/* The family's parameters, in descriptor order (names in conv.c). */
enum { CP_ALGO, CP_TOC, CP_TP, CP_DWTP, CP_GTM, CP_GTN, CP_GORD, CP_LTS, CP_LWPT, CP_PWG, CP_DWVW, CP_DWR, CP_COUNT };

struct conv_ctx;

/* One convolution algorithm (see the header of conv.c): base.name,
 * base.uses (bit i: reads parameter i; CP_ALGO itself is implied) and
 * base.select (its CONV_ALGO value, its index here). */
typedef struct kiln_conv_solver {
  kiln_solver base;
  int (*applies)(const kiln_tunable *t, const int *p, const kiln_device_info *d);
  int (*prefer)(const kiln_tunable *t);
  void (*features)(const kiln_tunable *t, const int *p, kiln_features *f);
  int (*launch)(const struct conv_ctx *c, kiln_error *err);
} kiln_conv_solver;

/* The registry: solver i is CONV_ALGO=i. */
extern const kiln_conv_solver kiln_conv_solvers[];
extern const int kiln_conv_nsolvers;
#endif
