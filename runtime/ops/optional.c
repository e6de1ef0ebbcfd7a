/* ops/optional.c: ONNX optionals (Optional, OptionalHasElement,
 * OptionalGetElement). An optional value is its element's value (a tensor
 * or a sequence) with the flag `none` when it holds nothing; whether it
 * does is known when planning (an input set with kiln_session_set_input_none,
 * an Optional without input), so OptionalHasElement is folded and the
 * element ops copy a tensor on the device or pass a sequence's list on. */
#include "kiln_internal.h"

/* Output 0 the same as input v: a sequence's list, or a tensor's type and shape. */
static int same_as(kiln_graph *g, kiln_node *n, kiln_value *v, kiln_error *err) {
  kiln_value *o = kiln_out(g, n, 0);
  o->none = v->none;
  if (v->dtype == KILN_DT_SEQUENCE) {
    const kiln_seq *sq = v->data;
    if (!sq) return kiln__err(err, KILN_EUNSUPPORTED, "sequence not known when planning");
    return kiln__seq_copy(o, sq, err);
  }
  kiln_set_out(g, n, 0, v->dtype, v->rank, v->dims);
  return 0;
}

static int optional_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *v = kiln_in(g, n, 0);
  if (v) return same_as(g, n, v, err);
  int64_t z = 0; /* Optional() holds nothing: an empty stand-in */
  kiln_set_out(g, n, 0, KILN_DT_UINT8, 1, &z);
  kiln_out(g, n, 0)->none = true;
  return 0;
}

static int get_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *v = kiln_in(g, n, 0);
  if (v->none) return kiln__err(err, KILN_EINVAL, "the optional '%s' holds nothing", v->name);
  return same_as(g, n, v, err);
}

static int has_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *v = kiln_in(g, n, 0), *o = kiln_out(g, n, 0);
  kiln_set_out(g, n, 0, KILN_DT_BOOL, 0, NULL);
  free(o->data);
  if (!(o->data = malloc(1))) return kiln__err(err, KILN_ENOMEM, "out of memory");
  *(uint8_t *)o->data = v && !v->none;
  o->is_const = true; /* known when planning */
  return 0;
}

static int copy_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *o = kiln_out(g, n, 0);
  if (o->dtype != KILN_DT_SEQUENCE && in[0] && out[0]) memcpy(out[0], in[0], kiln_value_bytes(o));
  return 0;
}

static int copy_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *o = kiln_out(x->g, n, 0);
  size_t b = kiln_value_bytes(o);
  if (o->dtype == KILN_DT_SEQUENCE || !kiln_has_in(n, 0) || !b) return 0;
  kiln__rec_other();
  cl_int e = clEnqueueCopyBuffer(x->d->q, kiln_in_buf(x, n, 0), kiln_out_buf(x, n, 0), 0, 0, b, 0, NULL, NULL);
  if (e != CL_SUCCESS) return kiln__err(err, KILN_ECL, "clEnqueueCopyBuffer: %s", kiln__clerror(e));
  x->launches++;
  return 0;
}

static int nothing_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) { return 0; }

const kiln_op_def kiln_ops_optional[] = {
  {.name = "Optional", .infer = optional_infer, .ref = copy_ref, .dev = copy_dev},
  {.name = "OptionalGetElement", .infer = get_infer, .ref = copy_ref, .dev = copy_dev},
  {.name = "OptionalHasElement", .infer = has_infer, .ref = nothing_ref, .dev = copy_dev},
  {NULL},
};
