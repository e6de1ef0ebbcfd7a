/* probe.c: `kiln probe`: microbenchmarks that measure how this device
 * actually behaves (kernels/probe.cl): global-memory read, write and copy
 * bandwidth against buffer size, local-memory bandwidth, arithmetic peak per
 * vector width, the rate of a layout change by index arithmetic (an im2col
 * into GEMM panels), kernel launch overhead, host<->device transfer rates and
 * program build time per kB of source. Every figure is the median of several
 * repeats with its spread; the result is stored with the device's row in the
 * tuning database as JSON.
 *
 * The quick probe (kiln_probe_quick) measures only the figures the cost
 * model reads (copy bandwidth, not read and write), with fewer repeats,
 * smaller buffers and shorter samples: what a session without a probed
 * database uses (probe_cache.c). Its cost beyond compiling is a few hundred
 * ms on an idle machine.
 *
 * Compiling is counted apart (kiln_device.compile_ms): probe.cl is one
 * program, built without storing its binary (on POCL, fetching a binary
 * generates code for all of its kernels), and each kernel's first launch
 * with a work-group size runs once untimed, its code generation counted as
 * compiling (kiln_cl_launch_ev). */
#include "kiln_costmodel.h"
#include <math.h>
#include <time.h>
#include <unistd.h>

/* How much a probe measures. */
typedef struct probe_cfg {
  int reps;                 /* samples per figure (odd: the median is one of them) */
  const size_t *sizes;      /* working-set sizes of the bandwidth figures (bytes) */
  int nsizes;
  size_t inner_bytes;       /* a bandwidth sample repeats its kernel until it moved this much */
  int flops_iters;          /* multiply-add rounds per work-item at vector width 1 */
  int local_reps;           /* rounds of the local-memory kernel */
  int gather_c, gather_hw;  /* the im2col of the gather figure: channels, image side */
  int launch_n;             /* empty kernels per launch-overhead sample */
  int span_inner;           /* pairs of empty kernels per span sample */
  int host;                 /* host transfers and build time too (not read by the cost model) */
  int copy_only;            /* bandwidth as copies only (the cost model reads no read or write figure) */
  int best;                 /* a figure's value is its best sample, not the median: with few
                               samples, on a machine that is busy when a first run probes it,
                               interference only takes away, and the best sample is the one
                               it touched least */
} probe_cfg;

static const size_t full_sizes[] = {(size_t)32 << 10, (size_t)256 << 10, (size_t)2 << 20, (size_t)16 << 20, (size_t)128 << 20};
static const probe_cfg full_cfg = {7, full_sizes, 5, (size_t)8 << 20, 4096 * 8, 4096, 64, 128, 100, 25, 1, 0, 0};
/* the quick probe's largest size is the full probe's too, so that both name the
 * same figure "copy bandwidth": a copy no cache holds (kiln_param_basis) */
static const size_t quick_sizes[] = {(size_t)32 << 10, (size_t)256 << 10, (size_t)2 << 20, (size_t)16 << 20, (size_t)128 << 20};
static const probe_cfg quick_cfg = {5, quick_sizes, 5, (size_t)1 << 20, 2048, 1024, 32, 64, 30, 6, 0, 1, 1};


typedef struct {
  kiln_probe_figure *f;
  int n, cap;
  int best;        /* value = best sample (probe_cfg.best) */
} figs;

/* One probe in progress: the device, its buffers and the figures so far. */
typedef struct probe_ctx {
  kiln_device *d;
  kiln_error *err;
  const probe_cfg *cfg;
  figs fs;
  size_t cu, wg, max_bytes;
  cl_mem a, b, small;       /* max_bytes each, and 4 MiB */
  struct { cl_kernel k; size_t lws[2]; } warm[16]; /* launched once already (warm_up) */
  int nwarm;
} probe_ctx;

#define REPS_MAX 7

static void add(figs *fs, const char *name, const char *unit, double *samples, int n, int higher_better) {
  kiln_probe_figure *nf = kiln__grow(fs->f, fs->n, &fs->cap, sizeof *nf, 32);
  if (!nf) return;
  fs->f = nf;
  qsort(samples, (size_t)n, sizeof(double), kiln__cmp_double);
  kiln_probe_figure *f = &fs->f[fs->n++];
  memset(f, 0, sizeof *f);
  snprintf(f->name, sizeof f->name, "%s", name);
  snprintf(f->unit, sizeof f->unit, "%s", unit);
  f->value = samples[n / 2];
  f->best = higher_better ? samples[n - 1] : samples[0];
  f->spread = f->value != 0 ? (samples[n - 1 - n / 5] - samples[n / 5]) / fabs(f->value) : 0;
  if (fs->best) f->value = f->best;
}

static int cl_fail(probe_ctx *c) { return c->err ? c->err->status : KILN_ECL; }

/* probe.cl's kernel name, built once for the probe (not kept in the binary cache). */
static cl_kernel probe_kernel(probe_ctx *c, const char *name) { return kiln_cl_kernel_once(c->d, "probe.cl", "", name, c->err); }

/* The first launch of k with this work-group size (its arguments set): run
 * once and waited for, since a driver may generate the kernel's code then
 * (POCL does, per work-group size; the launch counts that as compiling) and
 * no sample should hold that. Later calls for the same k and size: nothing. */
static int warm_up(probe_ctx *c, cl_kernel k, int dims, const size_t *gws, const size_t *lws) {
  size_t l0 = lws ? lws[0] : 0, l1 = lws && dims > 1 ? lws[1] : 0;
  for (int i = 0; i < c->nwarm; i++)
    if (c->warm[i].k == k && c->warm[i].lws[0] == l0 && c->warm[i].lws[1] == l1) return 0;
  if (c->nwarm < (int)(sizeof c->warm / sizeof c->warm[0])) {
    c->warm[c->nwarm].k = k;
    c->warm[c->nwarm].lws[0] = l0;
    c->warm[c->nwarm].lws[1] = l1;
    c->nwarm++;
  }
  /* the launch counts its code generation as compiling (kiln_cl_launch_ev) */
  int rc = kiln_cl_launch(c->d, k, dims, gws, lws, c->err);
  clFinish(c->d->q);
  return rc;
}

/* Time of one kernel launch from its profiling event, seconds (its first
 * launch warmed up before). */
static double timed_launch_nd(probe_ctx *c, cl_kernel k, int dims, const size_t *gws, const size_t *lws) {
  cl_event ev = NULL;
  if (warm_up(c, k, dims, gws, lws)) return -1;
  if (kiln_cl_launch_ev(c->d, k, dims, gws, lws, &ev, c->err)) return -1;
  clWaitForEvents(1, &ev);
  cl_ulong a = 0, b = 0;
  clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof a, &a, NULL);
  clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof b, &b, NULL);
  clReleaseEvent(ev);
  return (double)(b - a) * 1e-9;
}

/* The same for a 1-D range (lws 0: the implementation's choice). */
static double timed_launch(probe_ctx *c, cl_kernel k, size_t gws, size_t lws) { return timed_launch_nd(c, k, 1, &gws, lws ? &lws : NULL); }

/* Times of one read, write and copy pass over bytes (seconds, the better of
 * the two access patterns, each repeated inner times). */
static int bw_sample(probe_ctx *c, cl_kernel *k, size_t bytes, int inner, double t[3]) {
  cl_long n4 = (cl_long)(bytes / 16);
  size_t items = c->cu * c->wg * 4;
  if ((size_t)n4 < items) items = (size_t)n4;
  items = (items + c->wg - 1) / c->wg * c->wg;
  cl_float v = 1.0f;
  t[0] = t[1] = t[2] = INFINITY;
  for (int pat = 0; pat < 2; pat++) {
    cl_kernel R = k[pat * 3], W = k[pat * 3 + 1], C = k[pat * 3 + 2];
    size_t it = pat ? c->cu * 64 : items, lws = pat ? 64 : c->wg;
    double p[3] = {0, 0, 0};
    for (int i = 0; i < inner; i++) {
      int rc;
      double t0 = 0, t1 = 0;
      if (!c->cfg->copy_only) {
        if ((rc = kiln_cl_args(R, c->err, KARG(c->a), KARG(c->small), KARG(n4), KEND))) return rc;
        t0 = timed_launch(c, R, it, lws);
        if ((rc = kiln_cl_args(W, c->err, KARG(c->b), KARG(n4), KARG(v), KEND))) return rc;
        t1 = timed_launch(c, W, it, lws);
      }
      if ((rc = kiln_cl_args(C, c->err, KARG(c->a), KARG(c->b), KARG(n4), KEND))) return rc;
      double t2 = timed_launch(c, C, it, lws);
      if (t0 < 0 || t1 < 0 || t2 < 0) return cl_fail(c);
      p[0] += t0; p[1] += t1; p[2] += t2;
    }
    for (int q = 0; q < 3; q++) if (p[q] < t[q]) t[q] = p[q];
  }
  return 0;
}

/* Global memory against buffer size: cache levels show as steps. */
static int probe_bandwidth(probe_ctx *c) {
  static const char *const names[6] = {"read_bw", "write_bw", "copy_bw", "read_chunk", "write_chunk", "copy_chunk"};
  cl_kernel k[6] = {NULL};
  for (int i = 0; i < 6; i++)
    if ((!c->cfg->copy_only || i % 3 == 2) && !(k[i] = probe_kernel(c, names[i]))) return cl_fail(c);
  const probe_cfg *cfg = c->cfg;
  for (int si = 0; si < cfg->nsizes; si++) {
    size_t bytes = cfg->sizes[si] > c->max_bytes ? c->max_bytes : cfg->sizes[si];
    double rs[REPS_MAX], ws[REPS_MAX], cs[REPS_MAX];
    /* repeat inside a sample until it lasts a few ms, so small sizes are not launch-bound */
    int inner = (int)(cfg->inner_bytes / bytes);
    if (inner < 1) inner = 1;
    for (int r = 0; r < cfg->reps; r++) {
      double t[3];
      int rc = bw_sample(c, k, bytes, inner, t);
      if (rc) return rc;
      rs[r] = (double)bytes * inner / t[0] * 1e-9;
      ws[r] = (double)bytes * inner / t[1] * 1e-9;
      cs[r] = 2.0 * (double)bytes * inner / t[2] * 1e-9; /* read + write */
    }
    char name[48];
    const char *unit = bytes >= (1 << 20) ? "MiB" : "KiB";
    size_t shown = bytes >= (1 << 20) ? bytes >> 20 : bytes >> 10;
    if (!cfg->copy_only) {
      snprintf(name, sizeof name, "read_%zu%s", shown, unit);
      add(&c->fs, name, "GB/s", rs, cfg->reps, 1);
      snprintf(name, sizeof name, "write_%zu%s", shown, unit);
      add(&c->fs, name, "GB/s", ws, cfg->reps, 1);
    }
    snprintf(name, sizeof name, "copy_%zu%s", shown, unit);
    add(&c->fs, name, "GB/s", cs, cfg->reps, 1);
  }
  return 0;
}

static int probe_local(probe_ctx *c) {
  cl_kernel kl = probe_kernel(c, "local_bw");
  if (!kl) return cl_fail(c);
  double ls[REPS_MAX];
  cl_int reps = c->cfg->local_reps;
  size_t items = c->cu * c->wg * 4;
  for (int r = 0; r < c->cfg->reps; r++) {
    int rc = kiln_cl_args(kl, c->err, KARG(c->small), KARG(reps), KEND);
    if (rc) return rc;
    double t = timed_launch(c, kl, items, c->wg);
    if (t < 0) return cl_fail(c);
    ls[r] = (double)items * reps * 32.0 / t * 1e-9; /* one float4 read + one write */
  }
  add(&c->fs, "local", "GB/s", ls, c->cfg->reps, 1);
  return 0;
}

/* Samples (GFLOP/s) of probe.cl's chain kernel NAME_WIDTH: `chains` chains,
 * flops_iters / div rounds a work-item. */
static int time_chains(probe_ctx *c, const char *name, int width, int chains, int div, double *ps) {
  char kn[32];
  snprintf(kn, sizeof kn, "%s_%d", name, width);
  cl_kernel kf = probe_kernel(c, kn);
  if (!kf) return cl_fail(c);
  cl_int iters = c->cfg->flops_iters / div;
  cl_float fa = 0.999f, fb = 0.001f;
  size_t items = c->cu * c->wg * 8;
  for (int r = 0; r < c->cfg->reps; r++) {
    int rc = kiln_cl_args(kf, c->err, KARG(c->small), KARG(iters), KARG(fa), KARG(fb), KEND);
    if (rc) return rc;
    double t = timed_launch(c, kf, items, c->wg);
    if (t < 0) return cl_fail(c);
    ps[r] = 2.0 * width * chains * (double)iters * (double)items / t * 1e-9;
  }
  return 0;
}

/* Arithmetic peak per vector width (the cost model's figures: 8 chains of
 * mad), and the device's peak (flops_peak: 16 chains of fma, or the best
 * width if that is higher). */
static int probe_flops(probe_ctx *c) {
  static const int vws[] = {1, 2, 4, 8, 16}, fws[] = {1, 4, 16};
  double best = 0, bs[REPS_MAX], ps[REPS_MAX], med[REPS_MAX];
  for (size_t vi = 0; vi < sizeof vws / sizeof vws[0]; vi++) {
    int rc = time_chains(c, "flops", vws[vi], 8 /* CHAINS */, vws[vi], ps);
    if (rc) return rc;
    char name[32];
    snprintf(name, sizeof name, "flops_vec%d", vws[vi]);
    add(&c->fs, name, "GFLOP/s", ps, c->cfg->reps, 1);
    if (c->fs.n > 0 && c->fs.f[c->fs.n - 1].value > best) { best = c->fs.f[c->fs.n - 1].value; memcpy(bs, ps, sizeof(double) * (size_t)c->cfg->reps); }
  }
  for (size_t vi = 0; vi < sizeof fws / sizeof fws[0]; vi++) {
    int rc = time_chains(c, "fma", fws[vi], 16 /* FMA_CHAINS */, 2 * fws[vi], ps);
    if (rc) return rc;
    memcpy(med, ps, sizeof(double) * (size_t)c->cfg->reps);
    qsort(med, (size_t)c->cfg->reps, sizeof(double), kiln__cmp_double);
    const double m = c->cfg->best ? med[c->cfg->reps - 1] : med[c->cfg->reps / 2]; /* as add() reads a figure */
    if (m > best) { best = m; memcpy(bs, ps, sizeof(double) * (size_t)c->cfg->reps); }
  }
  add(&c->fs, "flops_peak", "GFLOP/s", bs, c->cfg->reps, 1);
  return 0;
}

/* Layout changes: elements moved by index arithmetic into another layout
 * (an im2col into GEMM panels), a cost the bandwidth figures do not show. */
static int probe_gather(probe_ctx *c) {
  cl_int C = c->cfg->gather_c, H = c->cfg->gather_hw, W = c->cfg->gather_hw;
  size_t elems = (size_t)C * 9 * (size_t)H * (size_t)W, in_bytes = (size_t)C * H * W * 4;
  if (elems * 4 > c->max_bytes || in_bytes > c->max_bytes) return 0;
  cl_kernel kg = probe_kernel(c, "gather_panel");
  if (!kg) return cl_fail(c);
  double gs[REPS_MAX];
  size_t gws[2] = {(size_t)C * 9, (size_t)H};
  int rc = kiln_cl_args(kg, c->err, KARG(c->a), KARG(c->b), KARG(C), KARG(H), KARG(W), KEND);
  if (rc) return rc;
  for (int r = 0; r < c->cfg->reps; r++) {
    double t = timed_launch_nd(c, kg, 2, gws, NULL);
    if (t < 0) return cl_fail(c);
    gs[r] = t > 0 ? (double)elems / (t * 1e9) : 0; /* elements per ns */
  }
  add(&c->fs, "gather", "Gelem/s", gs, c->cfg->reps, 1);
  return 0;
}

/* Launch overhead: back-to-back empty kernels (throughput) and one synchronous launch. */
static int probe_launch(probe_ctx *c) {
  cl_kernel ke = probe_kernel(c, "empty");
  if (!ke) return cl_fail(c);
  double lo[REPS_MAX], ls[REPS_MAX];
  size_t one = 1;
  int n = c->cfg->launch_n, rc;
  if ((rc = warm_up(c, ke, 1, &one, NULL))) return rc;
  for (int r = 0; r < c->cfg->reps; r++) {
    clFinish(c->d->q);
    double t0 = kiln__now_s();
    for (int i = 0; i < n; i++)
      if ((rc = kiln_cl_launch(c->d, ke, 1, &one, NULL, c->err))) return rc;
    clFinish(c->d->q);
    lo[r] = (kiln__now_s() - t0) / n * 1e6;
    t0 = kiln__now_s();
    if ((rc = kiln_cl_launch(c->d, ke, 1, &one, NULL, c->err))) return rc;
    clFinish(c->d->q);
    ls[r] = (kiln__now_s() - t0) * 1e6;
  }
  add(&c->fs, "launch", "us", lo, c->cfg->reps, 0);
  add(&c->fs, "launch_sync", "us", ls, c->cfg->reps, 0);
  return 0;
}

/* The fixed part of a span the tuner measures (profiling events, first
 * start to last end; candidates are ranked by their fastest repeat): an
 * empty kernel's own duration over all compute units, and what a second
 * kernel queued behind it adds (the gap between the first one's end and
 * its start, plus its duration). Wall-clock launch figures hold host work
 * that no span does; each figure is the fastest of a sample's repeats. */
static int probe_span(probe_ctx *c) {
  cl_kernel ke = probe_kernel(c, "empty");
  if (!ke) return cl_fail(c);
  double sp[REPS_MAX], gp[REPS_MAX];
  size_t items = c->cu * c->wg, lws = c->wg;
  int wrc = warm_up(c, ke, 1, &items, &lws);
  if (wrc) return wrc;
  for (int r = 0; r < c->cfg->reps; r++) {
    double s1 = INFINITY, s2 = INFINITY;
    for (int i = 0; i < c->cfg->span_inner; i++) {
      cl_event ev[2] = {NULL, NULL};
      clFinish(c->d->q);
      int rc = kiln_cl_launch_ev(c->d, ke, 1, &items, &lws, &ev[0], c->err);
      if (!rc) rc = kiln_cl_launch_ev(c->d, ke, 1, &items, &lws, &ev[1], c->err);
      if (!rc) clWaitForEvents(2, ev);
      cl_ulong a0 = 0, b0 = 0, b1 = 0;
      if (!rc) {
        clGetEventProfilingInfo(ev[0], CL_PROFILING_COMMAND_START, sizeof a0, &a0, NULL);
        clGetEventProfilingInfo(ev[0], CL_PROFILING_COMMAND_END, sizeof b0, &b0, NULL);
        clGetEventProfilingInfo(ev[1], CL_PROFILING_COMMAND_END, sizeof b1, &b1, NULL);
      }
      for (int k = 0; k < 2; k++) if (ev[k]) clReleaseEvent(ev[k]);
      if (rc) return rc;
      if (b0 > a0 && (double)(b0 - a0) * 1e-3 < s1) s1 = (double)(b0 - a0) * 1e-3;
      if (b1 > b0 && (double)(b1 - b0) * 1e-3 < s2) s2 = (double)(b1 - b0) * 1e-3;
    }
    sp[r] = isfinite(s1) ? s1 : 0;
    gp[r] = isfinite(s2) ? s2 : 0;
  }
  add(&c->fs, "launch_span", "us", sp, c->cfg->reps, 0);
  add(&c->fs, "launch_next", "us", gp, c->cfg->reps, 0);
  return 0;
}

/* Host <-> device transfers. */
static int probe_transfers(probe_ctx *c) {
  size_t bytes = c->max_bytes < ((size_t)64 << 20) ? c->max_bytes : ((size_t)64 << 20);
  void *hostbuf = malloc(bytes);
  if (!hostbuf) return kiln__err(c->err, KILN_ENOMEM, "out of memory");
  memset(hostbuf, 1, bytes);
  double h2d[REPS_MAX], d2h[REPS_MAX];
  for (int r = 0; r < c->cfg->reps; r++) {
    double t0 = kiln__now_s();
    clEnqueueWriteBuffer(c->d->q, c->a, CL_TRUE, 0, bytes, hostbuf, 0, NULL, NULL);
    double t1 = kiln__now_s();
    clEnqueueReadBuffer(c->d->q, c->a, CL_TRUE, 0, bytes, hostbuf, 0, NULL, NULL);
    double t2 = kiln__now_s();
    h2d[r] = (double)bytes / (t1 - t0) * 1e-9;
    d2h[r] = (double)bytes / (t2 - t1) * 1e-9;
  }
  free(hostbuf);
  add(&c->fs, "host_to_device", "GB/s", h2d, c->cfg->reps, 1);
  add(&c->fs, "device_to_host", "GB/s", d2h, c->cfg->reps, 1);
  return 0;
}

/* Program build time per kB of source (never cached: a unique define per build). */
static int probe_build(probe_ctx *c) {
  double bt[3];
  for (int r = 0; r < 3; r++) {
    size_t cap = 64 << 10, o = 0;
    char *src = malloc(cap);
    if (!src) return kiln__err(c->err, KILN_ENOMEM, "out of memory");
    for (int i = 0; i < 64 && o + 512 < cap; i++)
      o += (size_t)snprintf(src + o, cap - o, "__kernel void f%d(__global float *p, float a) { size_t i = get_global_id(0); p[i] = p[i] * a + (float)%d * SALT; }\n", i, i);
    char opts[64]; /* the salt: this build's round, process and clock */
    snprintf(opts, sizeof opts, "-DSALT=%d.%d%df", r + 1, (int)getpid() % 100000, (int)(kiln__now_s() * 1000) % 100000);
    const char *sp = src;
    cl_int e;
    double t0 = kiln__now_s();
    cl_program p = clCreateProgramWithSource(c->d->ctx, 1, &sp, &o, &e);
    if (e == CL_SUCCESS) e = clBuildProgram(p, 1, &c->d->dev, opts, NULL, NULL);
    double t = kiln__now_s() - t0;
    if (p) clReleaseProgram(p);
    free(src);
    if (e != CL_SUCCESS) return kiln__err(c->err, KILN_ECL, "probe build: %s", kiln__clerror(e));
    bt[r] = t * 1e3 / ((double)o / 1024.0);
  }
  add(&c->fs, "build_per_kb", "ms/kB", bt, 3, 0);
  return 0;
}

/* Runs the probe that cfg describes; the figures go to *out (caller frees). */
static int run_probe(kiln_device *d, const probe_cfg *cfg, figs *out, kiln_error *err) {
  probe_ctx c = {.d = d, .err = err, .cfg = cfg, .fs = {.best = cfg->best}};
  c.cu = (size_t)(d->info.compute_units > 0 ? d->info.compute_units : 1);
  c.wg = d->info.max_work_group >= 256 ? 256 : d->info.max_work_group;
  c.max_bytes = cfg->sizes[cfg->nsizes - 1];
  if (cfg->host && c.max_bytes < ((size_t)64 << 20)) c.max_bytes = (size_t)64 << 20;
  if (c.max_bytes > d->info.max_alloc / 2) c.max_bytes = (size_t)(d->info.max_alloc / 2);
  int rc = 0;
  c.a = kiln_cl_alloc(d, c.max_bytes, err);
  c.b = c.a ? kiln_cl_alloc(d, c.max_bytes, err) : NULL;
  c.small = c.b ? kiln_cl_alloc(d, (size_t)1 << 22, err) : NULL;
  if (!c.a || !c.b || !c.small) { rc = cl_fail(&c); goto done; }
  cl_float zero = 0;
  clEnqueueFillBuffer(d->q, c.a, &zero, sizeof zero, 0, c.max_bytes, 0, NULL, NULL);
  clEnqueueFillBuffer(d->q, c.b, &zero, sizeof zero, 0, c.max_bytes, 0, NULL, NULL);
  clFinish(d->q);
  if (!rc) rc = probe_bandwidth(&c);
  if (!rc) rc = probe_local(&c);
  if (!rc) rc = probe_flops(&c);
  if (!rc) rc = probe_gather(&c);
  if (!rc) rc = probe_launch(&c);
  if (!rc) rc = probe_span(&c);
  if (!rc && cfg->host) rc = probe_transfers(&c);
  if (!rc && cfg->host) rc = probe_build(&c);
done:
  if (c.a) clReleaseMemObject(c.a);
  if (c.b) clReleaseMemObject(c.b);
  if (c.small) clReleaseMemObject(c.small);
  if (rc) { free(c.fs.f); return rc; }
  *out = c.fs;
  return 0;
}

/* The figures as the JSON stored on a device row (malloc'd; NULL when out of memory). */
static char *figs_json(const figs *fs) {
  size_t cap = 256 + (size_t)fs->n * 160, o = 0;
  char *json = malloc(cap);
  if (!json) return NULL;
  o += (size_t)snprintf(json + o, cap - o, "{");
  for (int i = 0; i < fs->n; i++)
    o += (size_t)snprintf(json + o, cap - o, "%s\"%s\":{\"value\":%.6g,\"spread\":%.4g,\"unit\":\"%s\"}", i ? "," : "", fs->f[i].name, fs->f[i].value,
                          fs->f[i].spread, fs->f[i].unit);
  snprintf(json + o, cap - o, "}");
  return json;
}

int kiln_probe(kiln_device *d, kiln_db *db, kiln_probe_figure **out, int *nout, kiln_error *err) {
  figs fs = {0};
  int rc = run_probe(d, &full_cfg, &fs, err);
  if (rc) return rc;
  if (db) { /* stored as JSON on the device row */
    char *json = figs_json(&fs);
    if (json) {
      int64_t id;
      if ((rc = kiln_db_device(db, &d->info, &id, err)) == 0) rc = kiln_db_set_probe(db, id, json, err);
      free(json);
      if (rc) { free(fs.f); return rc; }
    }
  }
  *out = fs.f;
  *nout = fs.n;
  return 0;
}

int kiln_probe_quick(kiln_device *d, char **json, kiln_error *err) {
  figs fs = {0};
  *json = NULL;
  int rc = run_probe(d, &quick_cfg, &fs, err);
  if (rc) return rc;
  *json = figs_json(&fs);
  free(fs.f);
  return *json ? 0 : kiln__err(err, KILN_ENOMEM, "out of memory");
}
