/* cmd_info.c: `kiln info MODEL.onnx`: a model's inputs, outputs, op
 * histogram (with device support), parameter count and FLOPs (which need
 * the model planned on a device). */
#include "kiln_cli.h"
#include <stddef.h>
#include <stdlib.h>

typedef struct info_args {
  kiln_cli_list pos;
  kiln_cli_shapes shapes;
  bool json;
  const char *devsel;
} info_args;

static const kiln_cli_opt OPTS[] = {
  KILN_OPT_SHAPES(info_args, shapes, "bind an input's shape or a symbolic dimension (needed for FLOPs)"),
  KILN_OPT_DEVICE(info_args, devsel, "device used to plan the model for FLOPs and output shapes"),
  KILN_OPT_JSON(info_args, json, "print one JSON object on stdout"),
};

static const char *human_count(char *buf, size_t n, double v) {
  if (v >= 1e12) snprintf(buf, n, "%.2f T", v / 1e12);
  else if (v >= 1e9) snprintf(buf, n, "%.2f G", v / 1e9);
  else if (v >= 1e6) snprintf(buf, n, "%.2f M", v / 1e6);
  else if (v >= 1e3) snprintf(buf, n, "%.2f k", v / 1e3);
  else snprintf(buf, n, "%.0f", v);
  return buf;
}

typedef struct histo { struct { char op[64]; int count, ok; } e[256]; int n; } histo;

static void histo_add(const char *op, int count, int ok, void *ctx) {
  histo *h = ctx;
  if (h->n >= 256) return;
  snprintf(h->e[h->n].op, sizeof h->e[h->n].op, "%s", op);
  h->e[h->n].count = count;
  h->e[h->n].ok = ok;
  h->n++;
}

/* Plans the model on the device (zero inputs of the declared shapes) so that
 * output shapes and FLOPs are known. Returns 0, or fills why. */
static int plan_for_info(kiln_model *m, const char *devsel, char *why, size_t wl) {
  int nin = kiln_model_num_inputs(m);
  for (int i = 0; i < nin; i++) {
    kiln_value_info vi;
    kiln_model_input_info(m, i, &vi);
    if (vi.rank < 0) { snprintf(why, wl, "input '%s' has no shape: bind it with --shape %s=D0,D1,...", vi.name, vi.name); return -1; }
    for (int k = 0; k < vi.rank; k++)
      if (vi.dims[k] < 0) {
        snprintf(why, wl, "input '%s' dimension %d%s%s%s is not bound: pass --shape", vi.name, k, vi.dim_names[k] ? " ('" : "",
                 vi.dim_names[k] ? vi.dim_names[k] : "", vi.dim_names[k] ? "')" : "");
        return -1;
      }
  }
  kiln_error err = {0};
  if (kiln_model_check_supported(m, &err) != 0) { snprintf(why, wl, "the model has unsupported ops"); return -1; }
  kiln_device *d = NULL;
  if (kiln_cli__device_open(devsel, &d, &err) != 0) { snprintf(why, wl, "needs an OpenCL device to plan: %s", err.msg); return -1; }
  kiln_session *s = NULL;
  int rc = kiln_session_create(m, d, &s, &err);
  for (int i = 0; !rc && i < nin; i++) {
    kiln_value_info vi;
    kiln_model_input_info(m, i, &vi);
    kiln_tensor *t = kiln_tensor_new(vi.dtype, vi.rank, vi.dims);
    if (!t) { snprintf(err.msg, sizeof err.msg, "input '%s': cannot allocate", vi.name); rc = KILN_ENOMEM; break; }
    rc = kiln_session_set_input(s, vi.name, t, &err);
    kiln_tensor_free(t);
  }
  /* planning infers every shape and folds constants; nothing is compiled or
   * run (a CPU reference run of an SD-sized UNet takes hours) */
  uint64_t bytes = 0;
  if (!rc) rc = kiln_session_plan_memory(s, &bytes, &err);
  if (rc) snprintf(why, wl, "planning failed: %s", err.msg);
  kiln_session_free(s);
  kiln_device_close(d);
  return rc ? -1 : 0;
}

static int cmd_info(int argc, char **argv) {
  info_args a = {0};
  int prc = kiln_cli_parse(&kiln_cli_cmd_info, argc, argv, &a);
  if (prc) return kiln_cli_parse_exit(prc);
  const char *path = a.pos.v[0], *devsel = a.devsel;
  bool json = a.json;
  kiln_shape_binding *shapes = a.shapes.b;
  int nshapes = a.shapes.n;
  kiln_error err = {0};
  kiln_load_options lo = {.shapes = shapes, .nshapes = nshapes, .max_model_bytes = kiln_cli__max_model_bytes(0)};
  kiln_model *m = NULL;
  int rc = kiln_model_load(path, &lo, &m, &err);
  if (rc) return kiln_cli__fail(&err, rc);

  int nin = kiln_model_num_inputs(m), nout = kiln_model_num_outputs(m);
  kiln_value_info *ins = calloc((size_t)nin + 1, sizeof *ins), *outs = calloc((size_t)nout + 1, sizeof *outs);
  if (!ins || !outs) { free(ins); free(outs); kiln_model_free(m); kiln_cli__error("out of memory"); return 1; }
  for (int i = 0; i < nin; i++) kiln_model_input_info(m, i, &ins[i]);
  kiln_error unsup = {0};
  int supported = kiln_model_check_supported(m, &unsup) == 0;
  histo *h = calloc(1, sizeof *h);
  if (!h) { free(ins); free(outs); kiln_model_free(m); kiln_cli__error("out of memory"); return 1; }
  kiln_model_op_histogram(m, histo_add, h);
  char why[1200] = "";
  bool planned = plan_for_info(m, devsel, why, sizeof why) == 0;
  for (int i = 0; i < nout; i++) kiln_model_output_info(m, i, &outs[i]);
  kiln_model_stats st;
  kiln_model_get_stats(m, &st);
  int dev_unsupported_types = 0;
  for (int i = 0; i < h->n; i++) dev_unsupported_types += !h->e[i].ok;

  char sh[512], num[64];
  if (json) {
    printf("{\"model\":"); kiln_cli__json_str(stdout, path);
    printf(",\"ir_version\":%d,\"opset\":%d,\"nodes\":%d,\"inputs\":[", st.ir_version, st.opset, st.nodes);
    for (int pass = 0; pass < 2; pass++) {
      kiln_value_info *vi = pass ? outs : ins;
      int n = pass ? nout : nin;
      if (pass) printf("],\"outputs\":[");
      for (int i = 0; i < n; i++) {
        printf("%s{\"name\":", i ? "," : ""); kiln_cli__json_str(stdout, vi[i].name);
        printf(",\"dtype\":");
        if (vi[i].dtype) kiln_cli__json_str(stdout, kiln_dtype_name(vi[i].dtype)); else printf("null");
        printf(",\"shape\":"); kiln_cli__json_shape(stdout, vi[i].rank, vi[i].dims, vi[i].dim_names);
        printf("}");
      }
    }
    printf("],\"ops\":[");
    for (int i = 0; i < h->n; i++) {
      printf("%s{\"op\":", i ? "," : ""); kiln_cli__json_str(stdout, h->e[i].op);
      printf(",\"count\":%d,\"device\":%s}", h->e[i].count, h->e[i].ok ? "true" : "false");
    }
    printf("],\"params\":%lld,\"flops\":", (long long)st.params);
    if (planned) kiln_cli__json_num(stdout, st.flops); else printf("null,\"flops_note\":"), kiln_cli__json_str(stdout, why);
    printf(",\"supported\":%s,\"unsupported\":", supported ? "true" : "false");
    if (supported) printf("null"); else kiln_cli__json_str(stdout, unsup.msg);
    printf("}\n");
  } else {
    printf("model: %s (ONNX IR %d, opset %d, %d nodes)\n", path, st.ir_version, st.opset, st.nodes);
    for (int pass = 0; pass < 2; pass++) {
      kiln_value_info *vi = pass ? outs : ins;
      int n = pass ? nout : nin;
      printf("%s (%d):\n", pass ? "outputs" : "inputs", n);
      for (int i = 0; i < n; i++)
        printf("  %-24s %-8s %s\n", vi[i].name, vi[i].dtype ? kiln_dtype_name(vi[i].dtype) : "?",
               kiln_cli__fmt_shape(sh, sizeof sh, vi[i].rank, vi[i].dims, vi[i].dim_names));
    }
    printf("ops (%d types):\n", h->n);
    for (int i = 0; i < h->n; i++) printf("  %-24s %5d%s\n", h->e[i].op, h->e[i].count, h->e[i].ok ? "" : "   (no device support)");
    printf("parameters: %lld (%s)\n", (long long)st.params, human_count(num, sizeof num, (double)st.params));
    if (planned) printf("FLOPs per inference: %.0f (%s)\n", st.flops, human_count(num, sizeof num, st.flops));
    else printf("FLOPs per inference: unknown (%s)\n", why);
    if (!supported) printf("%s\n", unsup.msg);
    else if (dev_unsupported_types) printf("every op is known; %d op type%s without a device kernel run only when folded at plan time\n", dev_unsupported_types, dev_unsupported_types == 1 ? "" : "s");
    else printf("every op runs on the OpenCL device\n");
  }
  free(h);
  free(ins);
  free(outs);
  kiln_model_free(m);
  return 0;
}

const kiln_cli_cmd kiln_cli_cmd_info = {.name = "info", .fn = cmd_info, .flags = KILN_CLI_USES_DEVICE, KILN_CLI_MODEL_ARG(info_args), .extra_hint = " (one model at a time)", KILN_CLI_OPTS(OPTS),
  .summary = "show a model's inputs, outputs, ops, parameters and FLOPs"};
