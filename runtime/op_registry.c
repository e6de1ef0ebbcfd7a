/* op_registry.c: the list of op tables. Each file in runtime/ops/ exports one
 * table of kiln_op_def terminated by { NULL }; adding an op touches only its
 * own file. Lookup is by (domain, op_type). */
#include "kiln_internal.h"

extern const kiln_op_def kiln_ops_elementwise[];
extern const kiln_op_def kiln_ops_movement[];
extern const kiln_op_def kiln_ops_conv_pool[];
extern const kiln_op_def kiln_ops_gemm_norm[];
extern const kiln_op_def kiln_ops_reduce[];
extern const kiln_op_def kiln_ops_misc[];
extern const kiln_op_def kiln_ops_sequence[];
extern const kiln_op_def kiln_ops_strings[];
extern const kiln_op_def kiln_ops_attention[];
extern const kiln_op_def kiln_ops_control[];
extern const kiln_op_def kiln_ops_nms[];
extern const kiln_op_def kiln_ops_training[];
extern const kiln_op_def kiln_ops_roialign[];
extern const kiln_op_def kiln_ops_tfidf[];
extern const kiln_op_def kiln_ops_optional[];
extern const kiln_op_def kiln_ops_precision[];

static const kiln_op_def *const tables[] = {
  kiln_ops_elementwise, kiln_ops_movement, kiln_ops_conv_pool, kiln_ops_gemm_norm, kiln_ops_reduce, kiln_ops_misc, kiln_ops_sequence, kiln_ops_strings,
  kiln_ops_attention, kiln_ops_control, kiln_ops_nms, kiln_ops_roialign, kiln_ops_tfidf, kiln_ops_optional,
  kiln_ops_precision,
};

const kiln_op_def *kiln_op_lookup(const char *domain, const char *op_type) {
  if (domain && !strcmp(domain, "ai.onnx.preview.training")) { /* the optimizers */
    for (const kiln_op_def *d = kiln_ops_training; d->name; d++)
      if (!strcmp(d->name, op_type)) return d;
    return NULL;
  }
  if (domain && *domain && strcmp(domain, "ai.onnx") != 0) return NULL; /* only the default domain */
  for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
    for (const kiln_op_def *d = tables[t]; d->name; d++)
      if (!strcmp(d->name, op_type)) return d;
  return NULL;
}
