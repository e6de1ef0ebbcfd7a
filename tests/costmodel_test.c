/* costmodel_test.c: the cost model's correction learns what parameters cost
 * from measured samples and carries it to an instance it never saw.
 * Synthetic "measurements" of a family with an algorithm choice and a tile
 * parameter whose effects are multiplicative and shape-dependent (what the
 * base roofline cannot know) plus noise; the fit on five instances must rank
 * the held-out sixth's candidates (Kendall tau) and pick a near-best one, and
 * the base estimate alone must not (so the test can fail). Also: the built-in
 * prior never applies to a GPU, and the fit survives degenerate input. */
#include "kiln_costmodel.h"
#include <math.h>
#include <stdio.h>

static int failures;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); failures++; } } while (0)

static uint64_t rng = 12345;
static double urand(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng >> 11) / 9007199254740992.0;
}

/* "true" time of candidate (algo, tile) on an instance of `flops`: algo 1 is
 * 3x faster than algo 0 above 1e8 flops and 2x slower below; tile 8 is best
 * for algo 1, tile 2 for algo 0. */
static double truth(double flops, int algo, int tile) {
  double t = flops / 20.0; /* 20 GFLOP/s */
  if (algo == 1) t *= flops > 1e8 ? 1.0 / 3 : 2.0;
  double pref = algo == 1 ? 8 : 2;
  t *= 1 + 0.25 * fabs(log2(tile / pref));
  return t;
}

static void features(double flops, int algo, int tile, kiln_features *f) {
  memset(f, 0, sizeof *f);
  f->flops = flops;
  f->bytes = flops / tile;      /* the base estimate prefers big tiles: wrong for algo 0 */
  f->work_groups = 64;
  f->wg_size = 1;
  f->vec = algo == 1 ? 8 : 1;   /* and the vector algorithm everywhere: wrong below 1e8 */
  f->launches = 1;
}

/* One launch of 64 work-groups with this arithmetic and traffic. */
static kiln_features one_kernel(double flops, double bytes) {
  kiln_features f;
  memset(&f, 0, sizeof f);
  f.flops = flops;
  f.bytes = bytes;
  f.launches = 1;
  f.work_groups = 64;
  return f;
}

static double kendall(const double *a, const double *b, int n) {
  int c = 0, d = 0;
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      double x = (a[i] - a[j]) * (b[i] - b[j]);
      c += x > 0;
      d += x < 0;
    }
  return c + d ? (double)(c - d) / (c + d) : 0;
}

int main(void) {
  static const char probe[] =
    "{\"copy_32KiB\":{\"value\":30},\"copy_2MiB\":{\"value\":25},\"copy_128MiB\":{\"value\":12},\"local\":{\"value\":20},"
    "\"flops_vec1\":{\"value\":6},\"flops_vec2\":{\"value\":12},\"flops_vec4\":{\"value\":24},\"flops_vec8\":{\"value\":48},"
    "\"flops_vec16\":{\"value\":40},\"launch\":{\"value\":3}}";
  kiln_device_info info;
  memset(&info, 0, sizeof info);
  snprintf(info.name, sizeof info.name, "test cpu");
  info.compute_units = 4;
  kiln_devmodel m;
  kiln_error err = {0};
  CHECK(kiln_devmodel_from_probe(probe, &info, &m, &err) == 0);
  static const double inst_flops[6] = {2e7, 5e7, 3e8, 1e9, 4e9, 6e7};
  static const int tiles[4] = {1, 2, 4, 8};
  enum { NC = 8 };
  kiln_cm_samples s = {0};
  char key[32], par[64];
  for (int i = 0; i < 6; i++)
    for (int a = 0; a < 2; a++)
      for (int k = 0; k < 4; k++) {
        kiln_features f;
        features(inst_flops[i], a, tiles[k], &f);
        snprintf(key, sizeof key, "inst%d", i);
        snprintf(par, sizeof par, "ALGO=%d,TILE=%d", a, tiles[k]);
        double noise = 1 + 0.1 * (urand() - 0.5);
        CHECK(kiln_cm_samples_add(&s, &f, par, key, truth(inst_flops[i], a, tiles[k]) * noise) == 0);
      }
  CHECK(s.n == 6 * NC);
  /* hold out each instance in turn */
  double tau_fit = 0, tau_base = 0, regret_fit = 0, regret_base = 0;
  kiln_correction *c = malloc(sizeof *c);
  CHECK(c != NULL);
  if (!c) return 1;
  for (int i = 0; i < 6; i++) {
    snprintf(key, sizeof key, "inst%d", i);
    kiln_cm_fit_samples(&m, "toy", &s, key, c);
    CHECK(c->nsamples == 5 * NC);
    double pf[NC], pb[NC], meas[NC];
    int n = 0, bf = 0, bb = 0, bm = 0;
    for (int q = 0; q < s.n; q++) {
      if (strcmp(s.key[q], key)) continue;
      pf[n] = kiln_cm_predict_ns(&m, c, &s.f[q], s.par[q]);
      pb[n] = kiln_cm_predict_ns(&m, NULL, &s.f[q], s.par[q]);
      meas[n] = s.ns[q];
      if (pf[n] < pf[bf]) bf = n;
      if (pb[n] < pb[bb]) bb = n;
      if (meas[n] < meas[bm]) bm = n;
      n++;
    }
    CHECK(n == NC);
    tau_fit += kendall(pf, meas, n) / 6;
    tau_base += kendall(pb, meas, n) / 6;
    regret_fit += meas[bf] / meas[bm] / 6;
    regret_base += meas[bb] / meas[bm] / 6;
  }
  printf("held-out instances: fitted tau %.3f regret %.3f; base estimate alone tau %.3f regret %.3f\n", tau_fit, regret_fit, tau_base, regret_base);
  CHECK(tau_fit >= 0.7);
  CHECK(regret_fit <= 1.10);
  CHECK(tau_base < 0.7 || regret_base > 1.10); /* the correction is what makes the difference */
  /* transfer: TILE=8 runs 3x slower on the "k=1" shapes only (what a token
   * model averaged over all shapes cannot say); the residuals of the k=1
   * neighbours carry over to a held-out k=1 instance, not to a k=3 one */
  {
    kiln_cm_samples t = {0};
    static const int ks[6] = {1, 1, 1, 3, 3, 3};
    static const int cs[6] = {64, 128, 256, 64, 128, 256};
    for (int i = 0; i < 6; i++)
      for (int k = 0; k < 4; k++) {
        kiln_features f;
        double fl = 1e8 * cs[i] / 64 * ks[i] * ks[i];
        features(fl, 0, tiles[k], &f);
        snprintf(key, sizeof key, "1|C=%d,k=%dx%d|", cs[i], ks[i], ks[i]);
        snprintf(par, sizeof par, "ALGO=0,TILE=%d", tiles[k]);
        CHECK(kiln_cm_samples_add(&t, &f, par, key, truth(fl, 0, tiles[k]) * (ks[i] == 1 && tiles[k] == 8 ? 3 : 1)) == 0);
      }
    /* held out: the k=1 instance of 128 channels, then the k=3 one; the
     * prediction's |log error| on TILE=8 without and with the transfer */
    double err_plain[2], err_tr[2], unseen = 0;
    for (int h = 0; h < 2; h++) {
      const char *ho = h ? "1|C=128,k=3x3|" : "1|C=128,k=1x1|";
      int kk = h ? 3 : 1;
      kiln_cm_fit_samples(&m, "toy", &t, ho, c);
      kiln_cm_transfer tr;
      CHECK(kiln_cm_transfer_init(&tr, &m, c, &t, ho, ho) == 0);
      kiln_features f;
      double fl = 1e8 * 2 * kk * kk;
      features(fl, 0, 8, &f);
      double p = kiln_cm_predict_ns(&m, c, &f, "ALGO=0,TILE=8"), real = truth(fl, 0, 8) * (kk == 1 ? 3 : 1);
      err_plain[h] = fabs(log(p / real));
      err_tr[h] = fabs(log(p * kiln_cm_transfer_factor(&tr, "ALGO=0,TILE=8") / real));
      if (!h) unseen = kiln_cm_transfer_factor(&tr, "ALGO=0,TILE=16");
      kiln_cm_transfer_free(&tr);
    }
    printf("transfer: TILE=8 |log error| on the held-out 1x1 %.3f -> %.3f, on the 3x3 %.3f -> %.3f\n", err_plain[0], err_tr[0], err_plain[1],
           err_tr[1]);
    CHECK(err_tr[0] < 0.7 * err_plain[0]);
    CHECK(err_tr[1] < 0.7 * err_plain[1]);
    CHECK(unseen == 1); /* a setting nothing measured keeps the correction's prediction */
    kiln_cm_samples_free(&t);
  }
  /* the solvers a fit measured (kiln_cm_choose picks among them): a
   * device's own records count a solver with KILN_CM_TOK_MIN of them, a
   * prior by its dictionary */
  {
    kiln_cm_samples t = {0};
    kiln_features f1;
    features(1e8, 0, 8, &f1);
    for (int i = 0; i < KILN_CM_TOK_MIN; i++) CHECK(kiln_cm_samples_add(&t, &f1, "ALGO=1,TILE=8", "1|C=64|", 1e6) == 0);
    for (int i = 0; i < KILN_CM_TOK_MIN - 1; i++) CHECK(kiln_cm_samples_add(&t, &f1, "ALGO=2,TILE=8", "1|C=64|", 1e6) == 0);
    CHECK(kiln_cm_samples_add(&t, &f1, "ALGO=12,TILE=8", "1|C=64|", 1e6) == 0);
    CHECK(kiln_cm_solver_measured(NULL, &t, true, "ALGO=1,TILE=16"));
    CHECK(!kiln_cm_solver_measured(NULL, &t, true, "ALGO=2,TILE=8"));   /* too few records */
    CHECK(!kiln_cm_solver_measured(NULL, &t, true, "ALGO=0,TILE=8"));   /* none */
    CHECK(!kiln_cm_solver_measured(NULL, &t, true, "ALGO=12"));          /* one: a prefix of it is not ALGO=1's */
    kiln_correction *pc = calloc(1, sizeof *pc);
    CHECK(pc != NULL);
    if (pc) {
      pc->ntok = 2;
      snprintf(pc->tok[0], sizeof pc->tok[0], "ALGO=1");
      snprintf(pc->tok[1], sizeof pc->tok[1], "ALGO=1&TILE=8");
      CHECK(kiln_cm_solver_measured(pc, NULL, false, "ALGO=1,TILE=4"));
      CHECK(!kiln_cm_solver_measured(pc, NULL, false, "ALGO=0,TILE=8"));
      CHECK(!kiln_cm_solver_measured(pc, NULL, false, "ALGO=12,TILE=8"));
      free(pc);
    }
    kiln_cm_samples_free(&t);
  }
  /* degenerate input: no samples leaves the base estimate */
  kiln_cm_samples empty = {0};
  kiln_cm_fit_samples(&m, "toy", &empty, NULL, c);
  CHECK(c->nsamples == 0);
  kiln_features f;
  features(1e8, 1, 8, &f);
  CHECK(kiln_cm_predict_ns(&m, c, &f, "ALGO=1,TILE=8") == kiln_cm_base_ns(&m, &f));
  /* stored feature arrays: this kiln's round-trip; an older kiln's 7 leave
   * footprint and gathered unknown (0) */
  {
    kiln_features g = f, back;
    g.footprint = 3e6;
    g.gathered = 2e5;
    g.strided = 7e5;
    double a[KILN_REC_MAXFEAT];
    int na = 0;
    kiln_features_to_array(&g, a, &na);
    CHECK(na == 10 && na <= KILN_REC_MAXFEAT);
    kiln_features_from_array(a, na, &back);
    CHECK(!memcmp(&back, &g, sizeof g));
    kiln_features_from_array(a, 7, &back);
    CHECK(back.flops == g.flops && back.launches == g.launches && back.footprint == 0 && back.gathered == 0 && back.strided == 0);
    kiln_features_from_array(a, 9, &back);
    CHECK(back.gathered == g.gathered && back.strided == 0);
  }
  /* the base estimate: gathered elements cost 1 / gather ns each (this probe
   * has no gather figure: a copy's rate at the largest size, 12 / 8); a probe
   * without the figure is incomplete (kiln tune probes again), one with it is not */
  {
    kiln_features g = one_kernel(1e6, 4e6);
    double b0 = kiln_cm_base_ns(&m, &g);
    g.gathered = 3e6;
    CHECK(fabs(kiln_cm_base_ns(&m, &g) - b0 - 3e6 / (12.0 / 8)) < 1e-6 * b0);
    /* strided reads: the same rate, added after the correction, which they
     * leave as it was (a correction that halves memory-bound work, with a
     * weight on the memory share, must not scale them nor be moved by them) */
    {
      kiln_correction cs;
      memset(&cs, 0, sizeof cs);
      cs.nsamples = 100;
      cs.w[0] = log(0.5);
      cs.w[2] = 1.0;
      cs.w[7] = -0.3;
      kiln_features h = g;
      double p0 = kiln_cm_predict_ns(&m, &cs, &h, "ALGO=1");
      h.strided = 5e6;
      CHECK(fabs(kiln_cm_base_ns(&m, &h) - kiln_cm_base_ns(&m, &g) - 5e6 / (12.0 / 8)) < 1e-6 * b0);
      CHECK(fabs(kiln_cm_predict_ns(&m, &cs, &h, "ALGO=1") - p0 - 5e6 / (12.0 / 8)) < 1e-6 * p0);
    }
    CHECK(!m.complete);
    char probe2[sizeof probe + 160];
    snprintf(probe2, sizeof probe2, "{\"gather\":{\"value\":0.5},%s", probe + 1);
    kiln_devmodel m2;
    CHECK(kiln_devmodel_from_probe(probe2, &info, &m2, &err) == 0 && !m2.complete && m2.gather == 0.5);
    snprintf(probe2, sizeof probe2, "{\"gather\":{\"value\":0.5},\"launch_span\":{\"value\":0.4},\"launch_next\":{\"value\":2.5},%s", probe + 1);
    CHECK(kiln_devmodel_from_probe(probe2, &info, &m2, &err) == 0 && m2.complete && m2.gather == 0.5);
    /* the fixed part of a measured span: the empty kernel's duration, and
     * what each further kernel adds (without those figures, the wall-clock
     * launch, 3 us here, and a synchronous launch, the same by default) */
    kiln_features k1 = one_kernel(1e6, 4e6), k3 = k1;
    k3.launches = 3;
    CHECK(fabs(kiln_cm_base_ns(&m2, &k3) - kiln_cm_base_ns(&m2, &k1) - 2 * 2.5e3) < 1e-6);
    CHECK(fabs(kiln_cm_base_ns(&m, &k3) - kiln_cm_base_ns(&m, &k1) - 2 * (3e3 + 3e3)) < 1e-6);
    /* compulsory traffic: 64 MB re-read 16 times from a 4 MB footprint takes
     * less than 64 MB from memory, and no less than the footprint alone */
    g = one_kernel(1, 64e6);
    double streamed = kiln_cm_base_ns(&m, &g);
    g.footprint = 4e6;
    double reused = kiln_cm_base_ns(&m, &g);
    CHECK(reused < streamed && reused >= 4e6 / 30);
  }
  /* two built-in priors: a GPU gets the one measured on a GPU, not the CPU's */
  kiln_device_info gpu = info;
  gpu.is_gpu = 1;
  const char *cpu_probe = kiln_cm_prior_probe(&info), *gpu_probe = kiln_cm_prior_probe(&gpu);
  CHECK(cpu_probe && gpu_probe && strcmp(cpu_probe, gpu_probe) != 0);
  CHECK(kiln_cm_prior_device(&gpu) && kiln_cm_prior_device(&info) && strcmp(kiln_cm_prior_device(&gpu), kiln_cm_prior_device(&info)) != 0);
  kiln_correction *cg = malloc(sizeof *cg);
  kiln_devmodel mg, mc; /* no figures: the first prior of the kind */
  memset(&mg, 0, sizeof mg);
  memset(&mc, 0, sizeof mc);
  mg.info = gpu;
  mc.info = info;
  CHECK(cg && kiln_cm_prior(&mg, "conv", cg) == 0 && kiln_cm_prior(&mc, "conv", c) == 0 && cg->nsamples != c->nsamples);
  CHECK(kiln_cm_prior(&mg, "no-such-family", c) == KILN_ENOTFOUND);
  CHECK(kiln_cm_prior(&mc, "no-such-family", c) == KILN_ENOTFOUND);
  /* several CPU priors: a device gets the one measured on the device whose
   * figures are nearest its own; figures near another prior's move it there */
  {
    int np = 0, ns[4] = {0};
    for (; np < 4 && kiln_cm_prior_probe_nth(&info, np); np++) {
      kiln_devmodel pm;
      CHECK(kiln_devmodel_from_probe(kiln_cm_prior_probe_nth(&info, np), &info, &pm, NULL) == 0);
      CHECK(kiln_cm_prior(&pm, "conv", c) == 0);
      ns[np] = c->nsamples;
      /* 5% off in every figure: still that prior */
      for (int k = 0; k < 5; k++) pm.flops[k] *= 1.05;
      for (int k = 0; k < pm.nbw; k++) pm.bw[k] *= 0.95;
      pm.gather *= 1.05;
      CHECK(kiln_cm_prior(&pm, "conv", cg) == 0 && cg->nsamples == ns[np]);
    }
    CHECK(np >= 2 && ns[0] != ns[1]);
    CHECK(kiln_cm_prior_probe_nth(&info, 0) == kiln_cm_prior_probe(&info));
  }
  free(cg);
  /* a profile of the GPU the prior was measured on takes the prior's probe;
   * another GPU's keeps its spec sheet, with the prior's corrections */
  {
    kiln_devmodel pm, sm;
    kiln_cm_basis b;
    CHECK(kiln_cm_profile_model("h100", &pm, &b, &err) == 0 && b.measured_probe && b.prior_device[0]);
    CHECK(kiln_devmodel_profile("h100", &sm, &err) == 0 && pm.launch_us != sm.launch_us && pm.info.is_gpu);
    CHECK(kiln_cm_profile_model("m2", &pm, &b, &err) == 0 && !b.measured_probe && b.prior_device[0]);
    CHECK(kiln_cm_profile_model("no-such-gpu", &pm, &b, &err) == KILN_ENOTFOUND);
  }
  free(c);
  kiln_cm_samples_free(&s);
  printf("costmodel_test: %s\n", failures ? "FAILED" : "passed");
  return failures ? 1 : 0;
}
