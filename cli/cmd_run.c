/* cmd_run.c: `kiln run MODEL.onnx`: binds the inputs (files, --shape,
 * seeded --random values), runs the model on an OpenCL device --repeat
 * times, reports latency, compilation, memory and tuning, optionally
 * compares with the CPU reference (--check) and writes the outputs
 * (--output-dir). Exit 1 when --check finds a mismatch. */
#include "kiln_cli.h"
#include "kiln_db.h" /* kiln_verify_imported */
#include "run_sets.h"
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct run_args {
  kiln_cli_list pos, inputs;
  kiln_cli_shapes shapes;
  bool random, check, json, nofusion, verify_imported;
  uint64_t seed, repeat, max_memory, max_model;
  const char *outdir, *format, *dbpath, *devsel, *inputs_from, *precision;
} run_args;

#define A run_args
static const kiln_cli_opt OPTS[] = {
  KILN_OPT_INPUTS(A, inputs, "bind an input from a TensorProto (.pb) or NumPy (.npy) file; without\n"
           "NAME= it binds to the first input not bound yet"),
  {.name = "--inputs-from", .kind = KILN_OPT_STRING, .off = offsetof(A, inputs_from), .value = "DIR", .err = "--inputs-from needs a directory",
   .nonempty = true,
   .help = "run several input sets in one process, one after the other: DIR's\n"
           "subdirectories (0/, 1/, ... in numeric order) each hold NAME.npy or\n"
           "NAME.pb per input; shapes may differ between sets (each new set of\n"
           "input shapes is planned once; a set seen before reuses its plan).\n"
           "--repeat, --check apply per set; --output-dir writes DIR/<set>/"},
  {.name = "--random", .kind = KILN_OPT_FLAG, .off = offsetof(A, random),
   .help = "fill unbound inputs with seeded uniform [-1,1) floats (integers: 0..9);\n"
           "their shape must be declared by the model or bound with --shape"},
  KILN_OPT_SEED(A, seed, "seed for --random (default 0)"),
  KILN_OPT_SHAPES(A, shapes, "bind an input's shape, or a symbolic dimension (--shape N=1)"),
  {.name = "--output-dir", .kind = KILN_OPT_STRING, .off = offsetof(A, outdir), .value = "DIR", .err = "--output-dir needs a directory", .nonempty = true,
   .help = "write each output as DIR/<name>.npy (or .pb); only after a fully\n"
           "successful run (no files at all on error)"},
  {.name = "--format", .kind = KILN_OPT_STRING, .off = offsetof(A, format), .value = "npy|pb", .choices = "npy|pb",
   .err = "--format must be npy or pb", .help = "output file format (default npy)"},
  {.name = "--repeat", .kind = KILN_OPT_INT, .off = offsetof(A, repeat), .value = "N", .min = 1, .max = 1000000,
   .err = "--repeat needs an integer from 1 to 1000000",
   .help = "run N times; print median and min latency of runs 2..N (the first\n"
           "run plans the model and compiles kernels and is reported apart)"},
  KILN_OPT_DEVICE(A, devsel, KILN_CLI_DEVICE_HELP),
  {.name = "--check", .kind = KILN_OPT_FLAG, .off = offsetof(A, check),
   .help = "also run the CPU reference and compare; exit 1 when an element\n"
           "differs by more than 1e-3 x max(|ref|, 1% of the output's max |ref|)\n"
           "and by more than 1e-4 x the output's max |ref|"},
  KILN_OPT_JSON(A, json, "print one JSON object on stdout and nothing else"),
  KILN_OPT_DB(A, dbpath, "tuning database (default $KILN_DB, else ~/.cache/kiln/tuning.db if it exists;\n"
                         "$KILN_DB_PATH: shared read-only databases consulted after it)"),
  KILN_OPT_NOFUSION(A, nofusion, "run every node as its own kernel (for comparison)"),
  KILN_OPT_PRECISION(A, precision),
  {.name = "--verify-imported", .kind = KILN_OPT_FLAG, .off = offsetof(A, verify_imported),
   .help = "re-time imported or shared records for this exact device once before\n"
           "running; a record that misses its recorded time is demoted"},
  {.name = "--max-memory", .kind = KILN_OPT_INT, .off = offsetof(A, max_memory), .value = "BYTES", .err = "--max-memory needs a number of bytes",
   .help = "device memory budget: a plan that needs more streams the weights of\n"
           "as few kernels as it can from host memory before each of their runs\n"
           "(same outputs; bytes streamed and peak memory reported); a plan that\n"
           "does not fit even then is refused"},
  {.name = "--max-model-bytes", .kind = KILN_OPT_INT, .off = offsetof(A, max_model), .value = "BYTES", .min = 1,
   .err = "--max-model-bytes needs a positive number of bytes",
   .help = "refuse a model whose file and external data together are larger\n"
           "(default $KILN_MAX_MODEL_BYTES, else 4 GiB; every command honours the\n"
           "variable)"},
};
#undef A

/* What a run produced, for the report. */
typedef struct run_state {
  kiln_cli__ctx x;
  kiln_cli__check res;
  kiln_param_stats ps;
  kiln_run_stats rs;
  const kiln_device_info *di;
  double *ms, *sorted; /* per run, in order / sorted */
  double *timed, median; /* runs 2..N (run 1 alone when N is 1), sorted */
  double first_compile_ms, first_codegen_ms; /* compiling inside the first run (of it: first-launch code generation) */
  int nout;
  kiln_cli__sets sets;   /* --inputs-from */
} run_state;

/* --verify-imported: re-times imported records for this device. */
static int verify_imported(const run_args *a, run_state *r) {
  kiln_error err = {0};
  if (!r->x.db) { kiln_cli__error("--verify-imported needs a tuning database (--db, $KILN_DB or $KILN_DB_PATH)"); return 2; }
  kiln_verify_result *vr = NULL;
  int nv = 0, rc;
  if ((rc = kiln_verify_imported(r->x.s, r->x.db, NULL, &vr, &nv, &err)) != 0) return kiln_cli__fail(&err, rc);
  for (int i = 0; i < nv && !a->json; i++)
    printf("verify:  %s %s %s: typical %.1f us vs %.1f us for %s in the same rounds (margin %.0f%%): %s\n", vr[i].family, vr[i].shape_key,
           vr[i].params, vr[i].measured_ns / 1e3, vr[i].rival_ns / 1e3, vr[i].rival[0] ? vr[i].rival : "(no rival)", vr[i].tolerance * 100,
           vr[i].passed ? "kept" : "DEMOTED");
  if (!nv && !a->json) printf("verify:  no imported records to re-time for this model\n");
  free(vr);
  return 0;
}

/* Runs the bound inputs (with set, that set's first) --repeat times;
 * checks them and, for a set, writes its outputs. */
static int run_set(const run_args *a, run_state *r, kiln_cli__set *set) {
  kiln_error err = {0};
  int rc;
  if (set && (rc = kiln_cli__sets_bind(r->x.s, r->x.m, set)) != 0) return rc;
  kiln_session_get_stats(r->x.s, &r->rs);
  double c0 = r->rs.compile_ms, g0 = r->rs.codegen_ms;
  for (uint64_t k = 0; k < a->repeat; k++) {
    if ((rc = kiln_session_run(r->x.s, &err)) != 0) {
      if (set) kiln_cli__error("input set '%s': %s", set->name, err.msg[0] ? err.msg : kiln_strerror(rc));
      return set ? kiln_cli__exit_code(rc) : kiln_cli__fail(&err, rc);
    }
    kiln_session_get_stats(r->x.s, &r->rs);
    r->ms[k] = r->sorted[k] = r->rs.last_ms;
    if (k == 0 && !set) r->first_compile_ms = r->rs.compile_ms - c0, r->first_codegen_ms = r->rs.codegen_ms - g0;
  }
  /* with several runs, the first (planning, kernel compilation) is reported apart */
  r->timed = a->repeat > 1 ? r->sorted + 1 : r->sorted;
  uint64_t ntimed = a->repeat > 1 ? a->repeat - 1 : 1;
  qsort(r->timed, (size_t)ntimed, sizeof *r->timed, kiln_cli__cmp_double);
  r->median = ntimed % 2 ? r->timed[ntimed / 2] : 0.5 * (r->timed[ntimed / 2 - 1] + r->timed[ntimed / 2]);
  if (a->check) {
    kiln_cli__check_free(&r->res);
    if ((rc = kiln_cli__check_reference(r->x.s, r->nout, &r->res)) != 0) return rc;
  }
  if (!set) return 0;
  set->first_ms = r->ms[0];
  set->median_ms = r->median;
  set->plans_after = r->rs.plans_built;
  set->checked = a->check;
  set->check_ok = r->res.ok;
  set->max_rel = r->res.max_rel;
  if (a->check && !r->res.ok) {
    kiln_cli__error("input set '%s': an output differs from the CPU reference: max %s err %.3g > %g", set->name, r->res.scaled ? "scaled" : "rel",
                    r->res.scaled ? r->res.max_scaled : r->res.max_rel, r->res.rtol);
    return 1;
  }
  if (a->outdir) {
    char dir[4400];
    snprintf(dir, sizeof dir, "%s/%s", a->outdir, set->name);
    const kiln_tensor **o = calloc((size_t)r->nout + 1, sizeof *o);
    if (!o) { kiln_cli__error("out of memory"); return 1; }
    for (int i = 0; i < r->nout; i++) o[i] = kiln_session_output(r->x.s, i);
    rc = kiln_cli__write_outputs(dir, a->format, o, r->nout, true);
    free(o);
  }
  return rc;
}

/* Loads, binds, plans and runs: everything up to the report. */
static int run_model(const run_args *a, run_state *r) {
  kiln_error err = {0};
  int rc;
  kiln_cli__load lo = {.path = a->pos.v[0], .shapes = &a->shapes, .max_model_bytes = a->max_model, .inputs = &a->inputs,
                       .random = a->random, .seed = a->seed, .random_why = "--random"};
  r->ms = calloc((size_t)a->repeat, sizeof *r->ms);
  r->sorted = calloc((size_t)a->repeat, sizeof *r->sorted);
  if (!r->ms || !r->sorted) { kiln_cli__error("out of memory"); return 1; }
  /* everything that can be checked without a device comes first */
  if ((rc = kiln_cli__ctx_load(&r->x, &lo)) != 0) return rc;
  if (a->inputs_from && (rc = kiln_cli__sets_read(r->x.m, a->inputs_from, &r->sets)) != 0) return rc;
  if ((rc = kiln_cli__open_db(a->dbpath, 0, true, &r->x.db)) != 0) return rc;
  r->x.precision = a->precision;
  if ((rc = kiln_cli__ctx_session(&r->x, a->devsel, KILN_CLI_NOTE_CPU | (a->nofusion ? KILN_CLI_NO_FUSION : 0))) != 0) return rc;
  if (a->verify_imported && (rc = verify_imported(a, r)) != 0) return rc;
  if (a->max_memory) {
    /* plan first: refuse before anything runs when the plan does not fit even streaming its weights */
    uint64_t need = 0;
    kiln_session_set_max_memory(r->x.s, a->max_memory);
    if ((rc = kiln_session_plan_memory(r->x.s, &need, &err)) != 0) {
      if (rc != KILN_ELIMIT) return kiln_cli__fail(&err, rc);
      kiln_cli__error("--max-memory %llu: %s", (unsigned long long)a->max_memory, err.msg);
      return 2;
    }
  }
  r->nout = kiln_model_num_outputs(r->x.m);
  int nsets = r->sets.n ? r->sets.n : 1;
  for (int k = 0; k < nsets; k++)
    if ((rc = run_set(a, r, r->sets.n ? &r->sets.v[k] : NULL)) != 0) return rc;
  kiln_session_param_stats(r->x.s, &r->ps);
  r->di = kiln_device_get_info(r->x.d);
  return 0;
}

/* The report on stdout: one JSON object, or text. */
/* --max-memory below what one kernel needs at once (its weights, the layout
 * it packs them into, its scratch) is exceeded by that kernel: said on
 * stderr, in text and JSON mode alike. */
static void warn_over_budget(const run_args *a, const kiln_run_stats *rs) {
  if (!a->max_memory || rs->peak_device_bytes <= a->max_memory) return;
  fprintf(stderr, "kiln: warning: peak device memory %.2f MiB exceeded --max-memory %.2f MiB: with every other kernel's weights "
          "streamed, one kernel's weights, packed weights and scratch did not fit in what was left\n",
          rs->peak_device_bytes / 1048576.0, a->max_memory / 1048576.0);
}

static void print_report(const run_args *a, const run_state *r) {
  const char *path = a->pos.v[0];
  const kiln_device_info *di = r->di;
  const kiln_run_stats rs = r->rs;
  const kiln_param_stats ps = r->ps;
  const kiln_cli__inputs b = r->x.b;
  const kiln_cli__check res = r->res;
  const double *ms = r->ms, *timed = r->timed, median = r->median;
  uint64_t repeat = a->repeat;
  bool check = a->check;
  int nout = r->nout;
  kiln_db *db = r->x.db;
  kiln_session *s = r->x.s;
  if (a->json) {
    printf("{\"model\":"); kiln_cli__json_str(stdout, path);
    printf(",\"device\":"); kiln_cli__json_str(stdout, di->name);
    printf(",\"platform\":"); kiln_cli__json_str(stdout, di->platform);
    printf(",\"latency_ms\":{\"median\":"); kiln_cli__json_num(stdout, median);
    printf(",\"min\":"); kiln_cli__json_num(stdout, timed[0]);
    printf(",\"first\":"); kiln_cli__json_num(stdout, ms[0]);
    printf(",\"first_compile_ms\":"); kiln_cli__json_num(stdout, r->first_compile_ms);
    printf(",\"first_codegen_ms\":"); kiln_cli__json_num(stdout, r->first_codegen_ms);
    printf(",\"runs\":[");
    for (uint64_t r = 0; r < repeat; r++) { if (r) printf(","); kiln_cli__json_num(stdout, ms[r]); }
    printf("]},\"compile\":{\"programs\":%d,\"ms\":", rs.programs_compiled);
    kiln_cli__json_num(stdout, rs.compile_ms);
    printf(",\"codegen_ms\":");
    kiln_cli__json_num(stdout, rs.codegen_ms);
    printf("},\"tuning\":{\"db\":");
    char dbdesc[4096];
    kiln_db_describe(db, dbdesc, sizeof dbdesc);
    if (db) kiln_cli__json_str(stdout, dbdesc); else printf("null");
    printf(",\"tunable\":%d,\"tuned\":%d,\"predicted\":%d,\"default\":%d", ps.tunable, ps.tuned, ps.predicted, ps.defaulted);
    kiln_cli__json_basis(stdout, s);
    printf("}");
    printf(",\"precision\":\"%s\"", kiln_precision_name(kiln_session_precision(s)));
    printf(",\"streamed_bytes\":%llu,\"peak_device_bytes\":%llu", (unsigned long long)rs.streamed_bytes, (unsigned long long)rs.peak_device_bytes);
    warn_over_budget(a, &rs);
    printf(",\"kernels_launched\":%d,\"nodes_folded\":%d,\"device_bytes\":%llu,\"intermediate_bytes\":%llu,\"intermediate_peak_bytes\":%llu,\"inputs\":[",
           rs.kernels_launched, rs.nodes_folded, (unsigned long long)rs.device_bytes, (unsigned long long)rs.intermediate_bytes,
           (unsigned long long)rs.pool_bytes);
    for (int i = 0; i < b.n; i++) {
      printf("%s{\"name\":", i ? "," : ""); kiln_cli__json_str(stdout, b.info[i].name);
      printf(",\"dtype\":"); kiln_cli__json_str(stdout, kiln_dtype_name(b.t[i] ? b.t[i]->dtype : b.info[i].dtype));
      printf(",\"shape\":"); if (b.t[i]) kiln_cli__json_shape(stdout, b.t[i]->rank, b.t[i]->dims, NULL); else printf("null");
      printf(",\"random\":%s}", b.random[i] ? "true" : "false");
    }
    printf("],\"outputs\":[");
    for (int i = 0; i < nout; i++) {
      const kiln_tensor *t = kiln_session_output(s, i);
      kiln_cli__tstats ts = kiln_cli__tensor_stats(t);
      printf("%s{\"name\":", i ? "," : ""); kiln_cli__json_str(stdout, t->name);
      printf(",\"dtype\":"); kiln_cli__json_str(stdout, kiln_dtype_name(t->dtype));
      printf(",\"shape\":"); kiln_cli__json_shape(stdout, t->rank, t->dims, NULL);
      printf(",\"min\":"); kiln_cli__json_num(stdout, ts.min);
      printf(",\"max\":"); kiln_cli__json_num(stdout, ts.max);
      printf(",\"mean\":"); kiln_cli__json_num(stdout, ts.mean);
      printf("}");
    }
    printf("],\"plans_built\":%d,\"sets\":", rs.plans_built);
    if (!r->sets.n) printf("null");
    for (int k = 0; k < r->sets.n; k++) {
      const kiln_cli__set *st = &r->sets.v[k];
      printf("%s{\"name\":", k ? "," : "[");
      kiln_cli__json_str(stdout, st->name);
      printf(",\"inputs\":[");
      for (int i = 0, c = 0; i < r->sets.ninputs; i++) {
        if (!st->t[i]) continue;
        printf("%s{\"name\":", c++ ? "," : "");
        kiln_cli__json_str(stdout, b.info[i].name);
        printf(",\"shape\":");
        kiln_cli__json_shape(stdout, st->t[i]->rank, st->t[i]->dims, NULL);
        printf("}");
      }
      printf("],\"first_ms\":");
      kiln_cli__json_num(stdout, st->first_ms);
      printf(",\"median_ms\":");
      kiln_cli__json_num(stdout, st->median_ms);
      printf(",\"plans_built\":%d,\"check_ok\":%s}%s", st->plans_after, !st->checked ? "null" : st->check_ok ? "true" : "false", k == r->sets.n - 1 ? "]" : "");
    }
    printf(",\"check\":");
    if (!check) printf("null");
    else {
      printf("{\"ok\":%s,\"rtol\":%g,\"tolerance_of\":\"%s\",\"scaled_floor\":%g,\"precision\":\"%s\",\"max_abs_err\":", res.ok ? "true" : "false",
             res.rtol, res.scaled ? "max_scaled_err" : "max_rel_err", res.scaled ? 0.0 : KILN_CLI_CHECK_SCALED_FLOOR,
             kiln_precision_name(kiln_session_precision(s)));
      kiln_cli__json_num(stdout, res.max_abs);
      printf(",\"max_rel_err\":"); kiln_cli__json_num(stdout, res.max_rel);
      printf(",\"max_scaled_err\":"); kiln_cli__json_num(stdout, res.max_scaled);
      printf(",\"outputs\":[");
      for (int i = 0; i < nout; i++) {
        printf("%s{\"name\":", i ? "," : ""); kiln_cli__json_str(stdout, kiln_session_output(s, i)->name);
        printf(",\"max_abs_err\":"); kiln_cli__json_num(stdout, res.cmp[i].max_abs);
        printf(",\"max_rel_err\":"); kiln_cli__json_num(stdout, res.cmp[i].max_rel);
        printf(",\"max_scaled_err\":"); kiln_cli__json_num(stdout, res.cmp[i].max_scaled);
        printf(",\"ok\":%s}", res.cmp[i].ok ? "true" : "false");
      }
      printf("]}");
    }
    printf("}\n");
  } else {
    char sh[256];
    printf("model:   %s\n", path);
    printf("device:  %s (%s)\n", di->name, di->platform);
    for (int i = 0; i < b.n; i++)
      if (b.t[i]) printf("input '%s': %s %s%s\n", b.info[i].name, kiln_dtype_name(b.t[i]->dtype), kiln_cli__fmt_shape(sh, sizeof sh, b.t[i]->rank, b.t[i]->dims, NULL),
             b.random[i] ? " (random)" : "");
    if (r->sets.n) printf("latency: per set below (first run of a set with new shapes includes planning)\n");
    else if (repeat == 1) printf("latency: %.3f ms (one run, including planning and kernel compilation; use --repeat N)\n", ms[0]);
    else printf("latency: median %.3f ms, min %.3f ms over runs 2..%llu; first run %.3f ms (%.1f ms of it compiling, %.1f ms the rest)\n", median,
                timed[0], (unsigned long long)repeat, ms[0], r->first_compile_ms, ms[0] - r->first_compile_ms);
    printf("compile: %d program%s in %.1f ms (%.1f ms of it code generated at first launches); %d kernels launched per run; %d nodes folded at "
           "plan time; %.2f MiB on the device\n",
           rs.programs_compiled, rs.programs_compiled == 1 ? "" : "s", rs.compile_ms, rs.codegen_ms, rs.kernels_launched, rs.nodes_folded,
           (double)rs.device_bytes / (1 << 20));
    printf("memory:  intermediates total %.2f MiB, peak %.2f MiB (%.1f%%) in the planner's shared buffers\n", rs.intermediate_bytes / 1048576.0,
           rs.pool_bytes / 1048576.0, rs.intermediate_bytes ? 100.0 * (double)rs.pool_bytes / (double)rs.intermediate_bytes : 0.0);
    printf("         peak device memory %.2f MiB (with the kernels' packed weights and scratch)", rs.peak_device_bytes / 1048576.0);
    if (a->max_memory) printf("; --max-memory %.2f MiB: %.2f MiB of weights streamed per run", a->max_memory / 1048576.0, rs.streamed_bytes / 1048576.0);
    printf("\n");
    warn_over_budget(a, &rs);
    char dbdesc[4096];
    kiln_db_describe(db, dbdesc, sizeof dbdesc);
    kiln_cli__print_tuning(stdout, "tuning:  ", db ? dbdesc : NULL, s, &ps);
    for (int k = 0; k < r->sets.n; k++) {
      const kiln_cli__set *st = &r->sets.v[k];
      printf("set '%s':", st->name);
      for (int i = 0; i < r->sets.ninputs; i++)
        if (st->t[i]) printf(" %s %s", b.info[i].name, kiln_cli__fmt_shape(sh, sizeof sh, st->t[i]->rank, st->t[i]->dims, NULL));
      printf(": first run %.3f ms", st->first_ms);
      if (repeat > 1) printf(", median %.3f ms", st->median_ms);
      printf("; plans built so far %d", st->plans_after);
      if (st->checked) printf("; check %s (max rel err %.3g)", st->check_ok ? "ok" : "MISMATCH", st->max_rel);
      printf("\n");
    }
    printf("plans built: %d (one per new set of input shapes)\n", rs.plans_built);
    if (r->sets.n) printf("outputs of the last set '%s':\n", r->sets.v[r->sets.n - 1].name);
    for (int i = 0; i < nout; i++) kiln_cli__print_tensor("output", kiln_session_output(s, i));
    if (check) {
      if (res.scaled) /* an fp16 plan against the fp32 reference */
        printf("check vs CPU reference (fp32; plan in %s): max abs err %.3g, max err / max |ref| %.3g (tolerance %g), max rel err %.3g: %s\n",
               kiln_precision_name(kiln_session_precision(s)), res.max_abs, res.max_scaled, res.rtol, res.max_rel, res.ok ? "ok" : "MISMATCH");
      else
        printf("check vs CPU reference: max abs err %.3g, max err / max |ref| %.3g, max rel err %.3g (tolerance %g where the error is also over %g of max |ref|): %s\n",
               res.max_abs, res.max_scaled, res.max_rel, res.rtol, KILN_CLI_CHECK_SCALED_FLOOR, res.ok ? "ok" : "MISMATCH");
      for (int i = 0; i < nout; i++)
        if (nout > 1 || !res.cmp[i].ok || res.scaled)
          printf("  '%s': max abs err %.3g, max err / max |ref| %.3g, max rel err %.3g%s%s\n", kiln_session_output(s, i)->name, res.cmp[i].max_abs,
                 res.cmp[i].max_scaled, res.cmp[i].max_rel, res.cmp[i].ok ? "" : ": ", res.cmp[i].why);
    }
  }
}

static int cmd_run(int argc, char **argv) {
  run_args a = {.format = "npy", .repeat = 1};
  int rc = kiln_cli_parse(&kiln_cli_cmd_run, argc, argv, &a);
  if (rc) return kiln_cli_parse_exit(rc);
  struct stat st;
  if (a.outdir && stat(a.outdir, &st) == 0 && !S_ISDIR(st.st_mode)) {
    kiln_cli__error("--output-dir %s: exists and is not a directory", a.outdir);
    return 2;
  }
  run_state r = {0};
  if ((rc = run_model(&a, &r)) != 0) goto done;
  print_report(&a, &r);
  fflush(stdout);
  if (a.check && !r.res.ok) {
    for (int i = 0; i < r.nout; i++)
      if (!r.res.cmp[i].ok) {
        kiln_cli__error("output '%s' differs from the CPU reference: max %s err %.3g > %g (%s)", kiln_session_output(r.x.s, i)->name,
                        r.res.scaled ? "scaled" : "rel", r.res.scaled ? r.res.cmp[i].max_scaled : r.res.cmp[i].max_rel, r.res.rtol, r.res.cmp[i].why);
        break;
      }
    rc = 1;
    goto done;
  }
  if (a.outdir && !r.sets.n) { /* sets wrote theirs as they ran */
    const kiln_tensor **o = calloc((size_t)r.nout + 1, sizeof *o);
    if (!o) { kiln_cli__error("out of memory"); rc = 1; goto done; }
    for (int i = 0; i < r.nout; i++) o[i] = kiln_session_output(r.x.s, i);
    rc = kiln_cli__write_outputs(a.outdir, a.format, o, r.nout, a.json);
    free(o);
  }
done:
  kiln_cli__check_free(&r.res);
  kiln_cli__sets_free(&r.sets);
  kiln_cli__ctx_free(&r.x);
  free(r.ms);
  free(r.sorted);
  return rc;
}

const kiln_cli_cmd kiln_cli_cmd_run = {.name = "run", .fn = cmd_run, .flags = KILN_CLI_NEEDS_DEVICE, KILN_CLI_MODEL_ARG(run_args), .extra_hint = " (inputs are given with --input)", KILN_CLI_OPTS(OPTS),
  .summary = "run a model on an OpenCL device"};
