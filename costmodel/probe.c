/* probe.c: `kiln probe`: microbenchmarks that measure how this device
 * actually behaves (kernels/probe.cl): global-memory read, write and copy
 * bandwidth against buffer size, local-memory bandwidth, arithmetic peak per
 * vector width, the rate of a layout change by index arithmetic (an im2col
 * into GEMM panels), kernel launch overhead, host<->device transfer rates and
 * program build time per kB of source. Every figure is the median of several
 * repeats with its spread; the result is stored with the device's row in the
 * tuning database as JSON. */
#include "kiln_internal.h"
#include "kiln_db.h"
#include <math.h>
#include <time.h>

#define REPS 7

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct {
  kiln_probe_figure *f;
  int n, cap;
} figs;

static void add(figs *fs, const char *name, const char *unit, double *samples, int n, int higher_better) {
  if (fs->n == fs->cap) {
    fs->cap = fs->cap ? fs->cap * 2 : 32;
    kiln_probe_figure *nf = realloc(fs->f, sizeof *nf * (size_t)fs->cap);
    if (!nf) return;
    fs->f = nf;
  }
  qsort(samples, (size_t)n, sizeof(double), cmpd);
  kiln_probe_figure *f = &fs->f[fs->n++];
  memset(f, 0, sizeof *f);
  snprintf(f->name, sizeof f->name, "%s", name);
  snprintf(f->unit, sizeof f->unit, "%s", unit);
  f->value = samples[n / 2];
  f->best = higher_better ? samples[n - 1] : samples[0];
  f->spread = f->value != 0 ? (samples[n - 1 - n / 5] - samples[n / 5]) / fabs(f->value) : 0;
}

/* Time of one kernel launch from its profiling event, seconds. */
static double timed_launch(kiln_device *d, cl_kernel k, size_t gws, size_t lws, kiln_error *err) {
  cl_event ev = NULL;
  size_t l = lws;
  if (kiln_cl_launch_ev(d, k, 1, &gws, lws ? &l : NULL, &ev, err)) return -1;
  clWaitForEvents(1, &ev);
  cl_ulong a = 0, b = 0;
  clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof a, &a, NULL);
  clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof b, &b, NULL);
  clReleaseEvent(ev);
  return (double)(b - a) * 1e-9;
}

int kiln_probe(kiln_device *d, kiln_db *db, kiln_probe_figure **out, int *nout, kiln_error *err) {
  figs fs = {0};
  int rc = 0;
  size_t cu = (size_t)(d->info.compute_units > 0 ? d->info.compute_units : 1);
  size_t wg = d->info.max_work_group >= 256 ? 256 : d->info.max_work_group;
  size_t max_bytes = (size_t)128 << 20;
  if (max_bytes > d->info.max_alloc / 2) max_bytes = (size_t)(d->info.max_alloc / 2);
  cl_mem a = kiln_cl_alloc(d, max_bytes, err), b = a ? kiln_cl_alloc(d, max_bytes, err) : NULL;
  cl_mem small = b ? kiln_cl_alloc(d, (size_t)1 << 22, err) : NULL;
  if (!a || !b || !small) { rc = err ? err->status : KILN_ECL; goto done; }
  {
    cl_float zero = 0;
    clEnqueueFillBuffer(d->q, a, &zero, sizeof zero, 0, max_bytes, 0, NULL, NULL);
    clEnqueueFillBuffer(d->q, b, &zero, sizeof zero, 0, max_bytes, 0, NULL, NULL);
    clFinish(d->q);
  }
  cl_kernel kr = kiln_cl_kernel(d, "probe.cl", "-DVW=8", "read_bw", err);
  cl_kernel kw = kr ? kiln_cl_kernel(d, "probe.cl", "-DVW=8", "write_bw", err) : NULL;
  cl_kernel kc = kw ? kiln_cl_kernel(d, "probe.cl", "-DVW=8", "copy_bw", err) : NULL;
  cl_kernel kl = kc ? kiln_cl_kernel(d, "probe.cl", "-DVW=8", "local_bw", err) : NULL;
  cl_kernel ke = kl ? kiln_cl_kernel(d, "probe.cl", "-DVW=8", "empty", err) : NULL;
  cl_kernel kr2 = ke ? kiln_cl_kernel(d, "probe.cl", "-DVW=8", "read_chunk", err) : NULL;
  cl_kernel kw2 = kr2 ? kiln_cl_kernel(d, "probe.cl", "-DVW=8", "write_chunk", err) : NULL;
  cl_kernel kc2 = kw2 ? kiln_cl_kernel(d, "probe.cl", "-DVW=8", "copy_chunk", err) : NULL;
  if (!kc2) { rc = err ? err->status : KILN_ECL; goto done; }
  /* global memory against buffer size: cache levels show as steps */
  static const size_t sizes[] = {(size_t)32 << 10, (size_t)256 << 10, (size_t)2 << 20, (size_t)16 << 20, (size_t)128 << 20};
  size_t gsz = cu * wg * 4;
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    size_t bytes = sizes[si] > max_bytes ? max_bytes : sizes[si];
    cl_long n4 = (cl_long)(bytes / 16);
    size_t items = gsz;
    if ((size_t)n4 < items) items = (size_t)n4;
    items = (items + wg - 1) / wg * wg;
    double rs[REPS], ws[REPS], cs[REPS];
    cl_float v = 1.0f;
    for (int r = 0; r < REPS; r++) {
      /* repeat inside a sample until it lasts a few ms, so small sizes are not launch-bound */
      int inner = (int)((size_t)(8 << 20) / bytes);
      if (inner < 1) inner = 1;
      double tr = 0, tw = 0, tc = 0;
      /* both access patterns; the device's figure is the better one */
      double best_r = INFINITY, best_w = INFINITY, best_c = INFINITY;
      for (int pat = 0; pat < 2 && !rc; pat++) {
        cl_kernel R = pat ? kr2 : kr, W = pat ? kw2 : kw, C = pat ? kc2 : kc;
        size_t it = pat ? cu * 64 : items;
        double pr = 0, pw = 0, pc = 0;
        for (int i = 0; i < inner && !rc; i++) {
          if ((rc = kiln_cl_args(R, err, KARG(a), KARG(small), KARG(n4), KEND))) break;
          double t = timed_launch(d, R, it, pat ? 64 : wg, err);
          if ((rc = kiln_cl_args(W, err, KARG(b), KARG(n4), KARG(v), KEND))) break;
          double t2 = timed_launch(d, W, it, pat ? 64 : wg, err);
          if ((rc = kiln_cl_args(C, err, KARG(a), KARG(b), KARG(n4), KEND))) break;
          double t3 = timed_launch(d, C, it, pat ? 64 : wg, err);
          if (t < 0 || t2 < 0 || t3 < 0) { rc = err ? err->status : KILN_ECL; break; }
          pr += t; pw += t2; pc += t3;
        }
        if (pr < best_r) best_r = pr;
        if (pw < best_w) best_w = pw;
        if (pc < best_c) best_c = pc;
      }
      tr = best_r; tw = best_w; tc = best_c;
      if (rc) goto done;
      rs[r] = (double)bytes * inner / tr * 1e-9;
      ws[r] = (double)bytes * inner / tw * 1e-9;
      cs[r] = 2.0 * (double)bytes * inner / tc * 1e-9; /* read + write */
    }
    char name[48];
    const char *unit = bytes >= (1 << 20) ? "MiB" : "KiB";
    size_t shown = bytes >= (1 << 20) ? bytes >> 20 : bytes >> 10;
    snprintf(name, sizeof name, "read_%zu%s", shown, unit);
    add(&fs, name, "GB/s", rs, REPS, 1);
    snprintf(name, sizeof name, "write_%zu%s", shown, unit);
    add(&fs, name, "GB/s", ws, REPS, 1);
    snprintf(name, sizeof name, "copy_%zu%s", shown, unit);
    add(&fs, name, "GB/s", cs, REPS, 1);
  }
  /* local memory */
  {
    double ls[REPS];
    cl_int reps = 4096;
    size_t items = cu * wg * 4;
    for (int r = 0; r < REPS; r++) {
      if ((rc = kiln_cl_args(kl, err, KARG(small), KARG(reps), KEND))) goto done;
      double t = timed_launch(d, kl, items, wg, err);
      if (t < 0) { rc = err ? err->status : KILN_ECL; goto done; }
      ls[r] = (double)items * reps * 32.0 / t * 1e-9; /* one float4 read + one write */
    }
    add(&fs, "local", "GB/s", ls, REPS, 1);
  }
  /* arithmetic peak per vector width */
  {
    static const int vws[] = {1, 2, 4, 8, 16};
    double best = 0, bs[REPS];
    for (size_t vi = 0; vi < sizeof vws / sizeof vws[0]; vi++) {
      char opts[32], name[32];
      snprintf(opts, sizeof opts, "-DVW=%d", vws[vi]);
      cl_kernel kf = kiln_cl_kernel(d, "probe.cl", opts, "flops", err);
      if (!kf) { rc = err ? err->status : KILN_ECL; goto done; }
      cl_int iters = 4096 / vws[vi] * 8;
      cl_float fa = 0.999f, fb = 0.001f;
      size_t items = cu * wg * 8;
      double ps[REPS];
      for (int r = 0; r < REPS; r++) {
        if ((rc = kiln_cl_args(kf, err, KARG(small), KARG(iters), KARG(fa), KARG(fb), KEND))) goto done;
        double t = timed_launch(d, kf, items, wg, err);
        if (t < 0) { rc = err ? err->status : KILN_ECL; goto done; }
        ps[r] = 2.0 * vws[vi] * 8 /* CHAINS */ * (double)iters * (double)items / t * 1e-9;
      }
      snprintf(name, sizeof name, "flops_vec%d", vws[vi]);
      add(&fs, name, "GFLOP/s", ps, REPS, 1);
      if (fs.f[fs.n - 1].value > best) { best = fs.f[fs.n - 1].value; memcpy(bs, ps, sizeof bs); }
    }
    add(&fs, "flops_peak", "GFLOP/s", bs, REPS, 1);
  }
  /* layout changes: elements moved by index arithmetic into another layout
   * (an im2col into GEMM panels), a cost the bandwidth figures do not show */
  {
    cl_int C = 64, H = 128, W = 128;
    size_t elems = (size_t)C * 9 * (size_t)H * (size_t)W, in_bytes = (size_t)C * H * W * 4;
    if (elems * 4 <= max_bytes && in_bytes <= max_bytes) {
      cl_kernel kg = kiln_cl_kernel(d, "probe.cl", "-DVW=8", "gather_panel", err);
      if (!kg) { rc = err ? err->status : KILN_ECL; goto done; }
      double gs[REPS];
      size_t gws[2] = {(size_t)C * 9, (size_t)H};
      for (int r = -1; r < REPS; r++) { /* one warm-up */
        if ((rc = kiln_cl_args(kg, err, KARG(a), KARG(b), KARG(C), KARG(H), KARG(W), KEND))) goto done;
        cl_event ev = NULL;
        if ((rc = kiln_cl_launch_ev(d, kg, 2, gws, NULL, &ev, err))) goto done;
        clWaitForEvents(1, &ev);
        cl_ulong t0 = 0, t1 = 0;
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
        clReleaseEvent(ev);
        if (r >= 0) gs[r] = t1 > t0 ? (double)elems / (double)(t1 - t0) : 0; /* elements per ns */
      }
      add(&fs, "gather", "Gelem/s", gs, REPS, 1);
    }
  }
  /* launch overhead: back-to-back empty kernels (throughput) and one synchronous launch */
  {
    double lo[REPS], ls[REPS];
    size_t one = 1;
    for (int r = 0; r < REPS; r++) {
      clFinish(d->q);
      double t0 = now_s();
      for (int i = 0; i < 100; i++)
        if ((rc = kiln_cl_launch(d, ke, 1, &one, NULL, err))) goto done;
      clFinish(d->q);
      lo[r] = (now_s() - t0) / 100 * 1e6;
      t0 = now_s();
      if ((rc = kiln_cl_launch(d, ke, 1, &one, NULL, err))) goto done;
      clFinish(d->q);
      ls[r] = (now_s() - t0) * 1e6;
    }
    add(&fs, "launch", "us", lo, REPS, 0);
    add(&fs, "launch_sync", "us", ls, REPS, 0);
  }
  /* the fixed part of a span the tuner measures (profiling events, first
   * start to last end; candidates are ranked by their fastest repeat): an
   * empty kernel's own duration over all compute units, and what a second
   * kernel queued behind it adds (the gap between the first one's end and
   * its start, plus its duration). Wall-clock launch figures hold host work
   * that no span does; each figure is the fastest of a sample's repeats */
  {
    enum { INNER = 25 };
    double sp[REPS], gp[REPS];
    size_t items = cu * wg, lws = wg;
    for (int r = 0; r < REPS; r++) {
      double s1 = INFINITY, s2 = INFINITY;
      for (int i = 0; i < INNER; i++) {
        cl_event ev[2] = {NULL, NULL};
        clFinish(d->q);
        rc = kiln_cl_launch_ev(d, ke, 1, &items, &lws, &ev[0], err);
        if (!rc) rc = kiln_cl_launch_ev(d, ke, 1, &items, &lws, &ev[1], err);
        if (!rc) clWaitForEvents(2, ev);
        cl_ulong a0 = 0, b0 = 0, b1 = 0;
        if (!rc) {
          clGetEventProfilingInfo(ev[0], CL_PROFILING_COMMAND_START, sizeof a0, &a0, NULL);
          clGetEventProfilingInfo(ev[0], CL_PROFILING_COMMAND_END, sizeof b0, &b0, NULL);
          clGetEventProfilingInfo(ev[1], CL_PROFILING_COMMAND_END, sizeof b1, &b1, NULL);
        }
        for (int k = 0; k < 2; k++) if (ev[k]) clReleaseEvent(ev[k]);
        if (rc) goto done;
        if (b0 > a0 && (double)(b0 - a0) * 1e-3 < s1) s1 = (double)(b0 - a0) * 1e-3;
        if (b1 > b0 && (double)(b1 - b0) * 1e-3 < s2) s2 = (double)(b1 - b0) * 1e-3;
      }
      sp[r] = isfinite(s1) ? s1 : 0;
      gp[r] = isfinite(s2) ? s2 : 0;
    }
    add(&fs, "launch_span", "us", sp, REPS, 0);
    add(&fs, "launch_next", "us", gp, REPS, 0);
  }
  /* host <-> device transfers */
  {
    size_t bytes = max_bytes < ((size_t)64 << 20) ? max_bytes : ((size_t)64 << 20);
    void *hostbuf = malloc(bytes);
    if (!hostbuf) { rc = kiln__err(err, KILN_ENOMEM, "out of memory"); goto done; }
    memset(hostbuf, 1, bytes);
    double h2d[REPS], d2h[REPS];
    for (int r = 0; r < REPS; r++) {
      double t0 = now_s();
      clEnqueueWriteBuffer(d->q, a, CL_TRUE, 0, bytes, hostbuf, 0, NULL, NULL);
      double t1 = now_s();
      clEnqueueReadBuffer(d->q, a, CL_TRUE, 0, bytes, hostbuf, 0, NULL, NULL);
      double t2 = now_s();
      h2d[r] = (double)bytes / (t1 - t0) * 1e-9;
      d2h[r] = (double)bytes / (t2 - t1) * 1e-9;
    }
    free(hostbuf);
    add(&fs, "host_to_device", "GB/s", h2d, REPS, 1);
    add(&fs, "device_to_host", "GB/s", d2h, REPS, 1);
  }
  /* program build time per kB of source (never cached: a unique define per build) */
  {
    double bt[3];
    static int salt;
    for (int r = 0; r < 3; r++) {
      size_t cap = 64 << 10, o = 0;
      char *src = malloc(cap);
      if (!src) { rc = kiln__err(err, KILN_ENOMEM, "out of memory"); goto done; }
      for (int i = 0; i < 64 && o + 512 < cap; i++)
        o += (size_t)snprintf(src + o, cap - o, "__kernel void f%d(__global float *p, float a) { size_t i = get_global_id(0); p[i] = p[i] * a + (float)%d * SALT; }\n", i, i);
      char opts[64];
      snprintf(opts, sizeof opts, "-DSALT=%d.0f", ++salt + (int)(now_s() * 1000) % 100000);
      const char *sp = src;
      cl_int e;
      double t0 = now_s();
      cl_program p = clCreateProgramWithSource(d->ctx, 1, &sp, &o, &e);
      if (e == CL_SUCCESS) e = clBuildProgram(p, 1, &d->dev, opts, NULL, NULL);
      double t = now_s() - t0;
      if (p) clReleaseProgram(p);
      free(src);
      if (e != CL_SUCCESS) { rc = kiln__err(err, KILN_ECL, "probe build: %s", kiln__clerror(e)); goto done; }
      bt[r] = t * 1e3 / ((double)o / 1024.0);
    }
    add(&fs, "build_per_kb", "ms/kB", bt, 3, 0);
  }
  if (db) {
    /* store as JSON on the device row */
    size_t cap = 256 + (size_t)fs.n * 160, o = 0;
    char *json = malloc(cap);
    if (json) {
      o += (size_t)snprintf(json + o, cap - o, "{");
      for (int i = 0; i < fs.n; i++)
        o += (size_t)snprintf(json + o, cap - o, "%s\"%s\":{\"value\":%.6g,\"spread\":%.4g,\"unit\":\"%s\"}", i ? "," : "", fs.f[i].name, fs.f[i].value, fs.f[i].spread, fs.f[i].unit);
      snprintf(json + o, cap - o, "}");
      int64_t id;
      if ((rc = kiln_db_device(db, &d->info, &id, err)) == 0) rc = kiln_db_set_probe(db, id, json, err);
      free(json);
      if (rc) goto done;
    }
  }
done:
  if (a) clReleaseMemObject(a);
  if (b) clReleaseMemObject(b);
  if (small) clReleaseMemObject(small);
  if (rc) { free(fs.f); return rc; }
  *out = fs.f;
  *nout = fs.n;
  return 0;
}
