/* hello.c: the smallest program that embeds kiln through its installed
 * library: open a device, open (or create) a tuning database, load an ONNX
 * model, bind its inputs, run it, read the outputs, check them against kiln's
 * CPU reference, and optionally tune it.
 *
 * Build against an installed kiln with pkg-config only:
 *   cc -std=c11 -Wall -Werror hello.c $(pkg-config --cflags --libs kiln) -o hello
 * (kiln's pkg-config flags carry an rpath to its library directory, so the
 * program runs without LD_LIBRARY_PATH wherever kiln was installed)
 * Usage: hello [MODEL.onnx] [--db FILE] [--tune SECONDS]
 * Without a model it writes kiln's built-in demo CNN to a temporary file.
 * Exit status: 0 ok, 1 failure, 77 no OpenCL device (a test's "skipped"). */
#define _POSIX_C_SOURCE 200809L /* mkstemp, close: builds with -std=c11 */
#include <kiln.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int die(const char *what, const kiln_error *err, int rc) {
  fprintf(stderr, "hello: %s: %s\n", what, err->msg[0] ? err->msg : kiln_strerror(rc));
  return rc == KILN_ENODEVICE ? 77 : 1;
}

int main(int argc, char **argv) {
  const char *model_path = NULL, *db_path = NULL;
  double tune_s = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--db") && i + 1 < argc) db_path = argv[++i];
    else if (!strcmp(argv[i], "--tune") && i + 1 < argc) tune_s = atof(argv[++i]);
    else model_path = argv[i];
  }
  kiln_error err = {0};
  kiln_device *dev = NULL;
  kiln_model *model = NULL;
  kiln_session *sess = NULL;
  kiln_db *db = NULL;
  int rc, status = 1;
  char demo[] = "/tmp/kiln-hello-XXXXXX";

  printf("kiln %s\n", KILN_VERSION);
  if (!model_path) { /* kiln's demo CNN, written with seeded weights */
    int fd = mkstemp(demo);
    if (fd < 0) { perror("hello: mkstemp"); return 1; }
    close(fd);
    if ((rc = kiln_demo_write("cnn", demo, 1, &err)) != 0) return die("demo model", &err, rc);
    model_path = demo;
  }

  /* 1. a device: NULL picks the first GPU, else the first device */
  if ((rc = kiln_device_open(NULL, &dev, &err)) != 0) { status = die("device", &err, rc); goto out; }
  const kiln_device_info *di = kiln_device_get_info(dev);
  printf("device: %s (%s), %d compute units\n", di->name, di->platform, di->compute_units);

  /* 2. the model */
  if ((rc = kiln_model_load(model_path, NULL, &model, &err)) != 0) { status = die("load", &err, rc); goto out; }
  if ((rc = kiln_model_check_supported(model, &err)) != 0) { status = die("check", &err, rc); goto out; }
  if ((rc = kiln_session_create(model, dev, &sess, &err)) != 0) { status = die("session", &err, rc); goto out; }

  /* 3. an optional tuning database: tuned parameters are used by later runs */
  if (db_path) {
    if ((rc = kiln_db_open(db_path, KILN_DB_CREATE, &db, &err)) != 0) { status = die("database", &err, rc); goto out; }
    if ((rc = kiln_session_set_db(sess, db, &err)) != 0) { status = die("database", &err, rc); goto out; }
  }

  /* 4. inputs: a ramp in [-1, 1] for every float input with a static shape */
  for (int i = 0; i < kiln_model_num_inputs(model); i++) {
    kiln_value_info vi;
    kiln_model_input_info(model, i, &vi);
    if (vi.dtype != KILN_DT_FLOAT || vi.rank < 0) { fprintf(stderr, "hello: input '%s' is not a float tensor of known rank\n", vi.name); goto out; }
    kiln_tensor *t = kiln_tensor_new(KILN_DT_FLOAT, vi.rank, vi.dims);
    if (!t) { fprintf(stderr, "hello: input '%s' has unbound dimensions\n", vi.name); goto out; }
    int64_t n = kiln_tensor_numel(t);
    for (int64_t k = 0; k < n; k++) ((float *)t->data)[k] = (float)(2.0 * (double)(k % 97) / 96.0 - 1.0);
    rc = kiln_session_set_input(sess, vi.name, t, &err); /* copies t */
    kiln_tensor_free(t);
    if (rc) { status = die("input", &err, rc); goto out; }
    printf("input '%s': rank %d, %lld elements\n", vi.name, vi.rank, (long long)n);
  }

  /* 5. optional tuning, then run and read the outputs */
  if (db && tune_s > 0) {
    kiln_tune_options o = {.budget_s = tune_s};
    kiln_tune_result *res = NULL;
    int nres = 0;
    if ((rc = kiln_tune(sess, db, &o, &res, &nres, &err)) != 0) { status = die("tune", &err, rc); goto out; }
    printf("tuned %d kernel instances\n", nres);
    free(res);
  }
  for (int r = 0; r < 3; r++)
    if ((rc = kiln_session_run(sess, &err)) != 0) { status = die("run", &err, rc); goto out; }
  kiln_run_stats st;
  kiln_session_get_stats(sess, &st);
  printf("ran in %.3f ms (%d kernels)\n", st.last_ms, st.kernels_launched);
  for (int i = 0; i < kiln_model_num_outputs(model); i++) {
    const kiln_tensor *o = kiln_session_output(sess, i);
    printf("output '%s': %s, %lld elements", o->name ? o->name : "?", kiln_dtype_name(o->dtype), (long long)kiln_tensor_numel(o));
    if (o->dtype == KILN_DT_FLOAT && kiln_tensor_numel(o) > 0) printf(", first %g", ((const float *)o->data)[0]);
    printf("\n");
  }

  /* 6. the same inputs through the CPU reference */
  kiln_tensor **ref = NULL;
  int nref = 0;
  if ((rc = kiln_session_run_reference(sess, &ref, &nref, &err)) != 0) { status = die("reference", &err, rc); goto out; }
  double worst = 0;
  for (int i = 0; i < nref; i++) {
    const kiln_tensor *o = kiln_session_output(sess, i);
    double maxref = 0, maxdiff = 0;
    if (o->dtype == KILN_DT_FLOAT)
      for (int64_t k = 0; k < kiln_tensor_numel(o); k++) {
        double a = ((const float *)o->data)[k], b = ((const float *)ref[i]->data)[k];
        if (b < 0 ? -b > maxref : b > maxref) maxref = b < 0 ? -b : b;
        if ((a - b) * (a - b) > maxdiff * maxdiff) maxdiff = a > b ? a - b : b - a;
      }
    double e = maxref > 0 ? maxdiff / maxref : maxdiff;
    if (e > worst) worst = e;
    kiln_tensor_free(ref[i]);
  }
  free(ref);
  printf("max relative difference from the CPU reference: %.3g\n", worst);
  status = worst <= 1e-3 ? 0 : 1;
  printf("%s\n", status ? "MISMATCH" : "ok");
out:
  kiln_session_free(sess);
  kiln_db_close(db);
  kiln_model_free(model);
  kiln_device_close(dev);
  if (model_path == demo) remove(demo);
  return status;
}
