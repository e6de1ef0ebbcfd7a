/* kiln_costmodel.h: predicting a kernel candidate's time from its
 * descriptor's features and the device's measured figures.
 *
 * Two layers:
 *  - a base estimate, roofline-style: arithmetic at the probed peak for the
 *    candidate's vector width, global traffic at the probed bandwidth for its
 *    working-set size (where a candidate gives its compulsory traffic, that at
 *    the bandwidth for its size and the re-reads at a cache's), local traffic
 *    at the local bandwidth, the tail of the last wave of work-groups over the
 *    compute units, then elements moved into another layout (im2col panels,
 *    Winograd tiles, packed operands) at the probed gather rate, and launch
 *    overhead;
 *  - a correction fitted to the device's measured records of the same kernel
 *    family: ridge least squares of log(measured / base) over log features. */
#ifndef KILN_COSTMODEL_H
#define KILN_COSTMODEL_H

#include "kiln_internal.h"
#include "kiln_db.h"

/* What the model knows about a device (from `kiln probe` or a profile). */
typedef struct kiln_devmodel {
  char name[64];
  double flops[5];        /* GFLOP/s at vector width 1, 2, 4, 8, 16 */
  double bw_size[8];      /* working-set sizes (bytes) ... */
  double bw[8];           /* ... and copy bandwidth there (GB/s, read + write) */
  int nbw;
  double local_bw;        /* GB/s */
  double launch_us;       /* per kernel, back to back (wall clock: what a run's host pays) */
  double dep_us;          /* one synchronous launch (wall clock) */
  double span_us;         /* the fixed part of a measured span: an empty kernel's own ... */
  double next_us;         /* ... and what each further kernel queued behind it adds (probe "launch_span", "launch_next") */
  double gather;          /* elements per ns moved into another layout by index arithmetic (probe "gather") */
  int complete;           /* every figure this kiln's probe measures was there (else defaults stand in) */
  int compute_units;
  kiln_device_info info;  /* what valid() sees (a profile fills the key limits) */
} kiln_devmodel;

#define KILN_CM_NB 12     /* generic correction features (from kiln_features and the base estimate) */
#define KILN_CM_MAXTOK 400 /* parameter indicators: "NAME=V", "FIRST=V&NAME=V" and "FIRST=V&A=x&B=y" of the candidates' parameters */
#define KILN_CM_NX (KILN_CM_NB + 2 * KILN_CM_MAXTOK)
#define KILN_CM_TRIPLE_MIN 300 /* records a fit needs before it uses "FIRST=V&A=x&B=y" tokens */
#define KILN_CM_TOK_MIN 3      /* records a token needs to enter a fit (KILN_CM_TRIPLE_MIN records or more) */
/* Weighting of the fit towards each instance's fast candidates (see
 * kiln_cm_fit_samples). Held out by instance (kiln model eval) on this
 * session's records, 0 -> 1: conv tau 0.738 -> 0.750, regret 1.47 -> 1.31;
 * GEMM tau 0.646 -> 0.672, regret 9.2 -> 1.42 (resnet18's GEMV had been
 * picked 48x slow). */
#define KILN_CM_FOCUS 1.0
#define KILN_CM_MIN_SAMPLES 24 /* measured records of a family before predictions replace defaults */
/* Per-family correction: log(measured / base) = w . x, where x holds the
 * generic features (how compute- or memory-bound, vector width, work-group
 * size and count, the last wave's tail, the base estimate's scale), one
 * indicator per parameter value seen in the training records (and per pair
 * of the first parameter, an algorithm or kernel choice in every family, with
 * each other parameter), and each indicator times the instance's log
 * arithmetic (a choice that pays off on large instances may cost on small
 * ones), so what a parameter costs on this device is learned from its
 * measurements, for any family, without knowing its meaning.
 * w[KILN_CM_NB + i]: token i; w[KILN_CM_NB + KILN_CM_MAXTOK + i]: its scale term. */
typedef struct kiln_correction {
  char family[32];
  int nsamples;
  int ntok;
  char tok[KILN_CM_MAXTOK][48];
  double w[KILN_CM_NX];
  double sc_lo, sc_hi;      /* the range of the scale term over the records fitted (predictions clamp to it) */
} kiln_correction;

/* The quick probe (probe.c): the figures the cost model reads, measured
 * with fewer and shorter samples (well under 2 s), as the JSON a full probe
 * stores (*json malloc'd, the caller frees). */
int kiln_probe_quick(kiln_device *d, char **json, kiln_error *err);
/* Where a session's device figures came from (probe_cache.c). */
enum { KILN_CM_FIGS_PRIOR, KILN_CM_FIGS_DB, KILN_CM_FIGS_CACHED, KILN_CM_FIGS_PROBED };
typedef struct kiln_cm_figsrc {
  int kind;            /* KILN_CM_FIGS_* */
  char path[640];      /* the quick probe's cache file ("" none) */
  char note[1024];     /* why the cache was not used or not written ("" none) */
  double probe_ms;     /* the quick probe's time when it ran now (ms; 0 none) ... */
  double probe_compile_ms; /* ... and the part of it spent building its programs (ms) */
} kiln_cm_figsrc;
/* The quick probe's figures of d (*json malloc'd): from the user's cache, else
 * measured now and cached. KILN_ENOTFOUND when probing is off or there is no
 * cache directory, another status when the probe failed; never fails on the
 * cache itself (src->note says what went wrong with it). */
int kiln_cm_probe_cached(kiln_device *d, char **json, kiln_cm_figsrc *src);
/* Fills m from the probe JSON stored on the device row. */
int kiln_devmodel_from_probe(const char *json, const kiln_device_info *info, kiln_devmodel *m, kiln_error *err);
/* Spec-sheet profile of a known GPU ("rtx3060", "h100", "rx7900xtx", "arc-a770", "m2"). */
int kiln_devmodel_profile(const char *name, kiln_devmodel *m, kiln_error *err);
/* What a profile's predictions rest on besides its spec sheet. */
typedef struct kiln_cm_basis {
  char prior_device[128]; /* the corrections: the built-in GPU prior, measured on this device ("" none) */
  int measured_probe;     /* the profile names that device: its probe replaced the spec-sheet figures */
} kiln_cm_basis;
/* kiln_devmodel_profile, then the built-in GPU prior's probe in place of the
 * spec sheet when the prior was measured on a device the profile names.
 * basis (may be NULL) says which. */
int kiln_cm_profile_model(const char *name, kiln_devmodel *m, kiln_cm_basis *basis, kiln_error *err);
/* Names of the profiles, NULL-terminated. */
const char *const *kiln_devmodel_profiles(void);

/* Base estimate (ns) of one candidate. */
double kiln_cm_base_ns(const kiln_devmodel *m, const kiln_features *f);
/* Prediction (ns) of a candidate with features f and canonical parameter
 * text params ("NAME=V,..."; NULL: none) with a correction (NULL or
 * nsamples == 0: the base estimate). */
double kiln_cm_predict_ns(const kiln_devmodel *m, const kiln_correction *c, const kiln_features *f, const char *params);
/* Fits a correction from (features, parameters, measured ns) triples (params
 * may be NULL); n may be small (the ridge keeps a few samples from overfitting). */
void kiln_cm_fit(const kiln_devmodel *m, const char *family, const kiln_features *fs, const char *const *params, const double *ns, int n,
                 kiln_correction *c);

/* Features <-> the record's array form. */
void kiln_features_to_array(const kiln_features *f, double *a, int *n);
void kiln_features_from_array(const double *a, int n, kiln_features *f);

/* Measured samples of a family (features, parameter text, instance key, ns). */
typedef struct kiln_cm_samples {
  kiln_features *f;
  double *ns;
  char (*key)[320];    /* "dtype|shape_key|epilogue" */
  char (*par)[256];
  const char **pp;     /* scratch: pointers into par */
  int n, cap;
} kiln_cm_samples;
int kiln_cm_samples_add(kiln_cm_samples *s, const kiln_features *f, const char *params, const char *key, double ns);
/* Whether the fit behind correction c measured the solver that candidate ps
 * (a canonical parameter string) runs: its first item, the family's
 * selector (conv's CONV_ALGO, gemm's KERNEL). own: c was fitted on smp, a
 * device's own records, of which at least KILN_CM_TOK_MIN must have that
 * solver; otherwise c is a built-in prior, whose dictionary holds every
 * solver it was fitted on. kiln_cm_choose picks among the candidates of
 * measured solvers while there are any: a solver never measured gets no
 * correction of its own, only the base estimate scaled like the others, and
 * a database whose conv records were all dirc and dw16 made every 1x1 and
 * 3x3 of shufflenet_v2 (a model not in it) pick conv_direct: 18.5 ms a run
 * against 8.2 with no database at all (7.6 with this rule). */
bool kiln_cm_solver_measured(const kiln_correction *c, const kiln_cm_samples *smp, bool own, const char *ps);
/* Appends the device's measured ("ok" or "slow") records of a family. */
int kiln_cm_samples_db(kiln_db *db, int64_t device, const char *family, kiln_cm_samples *s, kiln_error *err);
void kiln_cm_samples_free(kiln_cm_samples *s);
/* The instance key as kiln_cm_samples stores it ("dtype|shape_key|epilogue"), of an instance and of a record. */
void kiln_cm_instance_key(int dtype, const char *shape_key, const char *epilogue, char *buf, size_t len);
void kiln_cm_record_key(const kiln_record *r, char *buf, size_t len);
/* Fits a correction on the samples, leaving out those of instance skip_key
 * (NULL: none), each weighted towards its instance's fastest (KILN_CM_FOCUS). */
void kiln_cm_fit_samples(const kiln_devmodel *m, const char *family, kiln_cm_samples *s, const char *skip_key, kiln_correction *c);

/* Transfer between instances: what the fitted correction still gets wrong
 * about a parameter setting on the instances that measured it (the residual
 * log(measured / predicted)) carries over to an instance of similar shape.
 * The same tile can be 30% off the correction on every 1x1 strided
 * convolution and right on the 3x3 ones; the correction, linear in
 * per-parameter tokens, cannot say so, the neighbours' measurements can.
 * Similarity: the sum of |log| ratios of the numbers in the two shape keys,
 * small numbers (kernel, stride, pads, groups: <= 16) counting KILN_CM_TR_SMALL
 * times, a different epilogue KILN_CM_TR_EPI; weight exp(-distance /
 * KILN_CM_TR_H); the weighted mean residual shrunk by KILN_CM_TR_K0 (a
 * setting measured only far away moves little). Held out by instance on
 * resnet18's convolutions (kiln model eval), tau 0.729 -> 0.761 and regret
 * 1.47 -> 1.29. */
#define KILN_CM_TR_SMALL 4.0
#define KILN_CM_TR_EPI 0.25
#define KILN_CM_TR_H 2.0
#define KILN_CM_TR_K0 0.5
typedef struct kiln_cm_transfer {
  int n;                       /* samples near enough to count */
  const kiln_cm_samples *s;
  int *ix;                     /* their indices in s, sorted by parameter text */
  double *res;                 /* log(measured / predicted), per entry of ix */
  double *w;                   /* weight for the target instance, per entry of ix */
} kiln_cm_transfer;
/* Builds the transfer set of the samples (those of skip_key left out) under
 * correction c towards the instance target_key. Returns 0 or KILN_ENOMEM. */
int kiln_cm_transfer_init(kiln_cm_transfer *ts, const kiln_devmodel *m, const kiln_correction *c, const kiln_cm_samples *s, const char *skip_key,
                          const char *target_key);
void kiln_cm_transfer_free(kiln_cm_transfer *ts);
/* The factor (multiplying a prediction) for params on the target instance; 1 if nothing near measured it. */
double kiln_cm_transfer_factor(const kiln_cm_transfer *ts, const char *params);

/* Evaluation of the model on a device's records of one family, holding out
 * each instance in turn (fit on the others, rank this one's candidates). */
typedef struct kiln_cm_eval {
  char family[32];
  int instances, records;
  double kendall_tau;     /* mean over instances */
  double top1, top5;      /* recall: fraction of instances whose measured best is the predicted best / in the predicted top 5 */
  double regret;          /* mean of measured(predicted best) / measured best */
} kiln_cm_eval;
/* Debugging output of an evaluation on stderr (`kiln model eval --trace,
 * --dump KEY`): trace, per held-out instance, its Kendall tau, regret, the
 * predicted and the measured best; dump, every candidate of the instances
 * whose key contains it (measured and predicted time, the base estimate's
 * parts, the correction terms that move it by more than 5%). */
typedef struct kiln_cm_eval_debug { int trace; const char *dump; } kiln_cm_eval_debug;
/* dbg may be NULL (no debugging output). */
int kiln_cm_evaluate(kiln_db *db, int64_t device, const kiln_devmodel *m, const char *family, const kiln_cm_eval_debug *dbg, kiln_cm_eval *out,
                     kiln_error *err);

/* Loads the device's model from the database (KILN_ENOTFOUND if never probed). */
int kiln_cm_load(kiln_db *db, int64_t device, const kiln_device_info *info, kiln_devmodel *m, kiln_error *err);
/* Fits the correction for a family from the database's measured records. */
int kiln_cm_fit_db(kiln_db *db, int64_t device, const kiln_devmodel *m, const char *family, kiln_correction *c, kiln_error *err);

/* The built-in prior (prior.c) for a device without its own probe or
 * records: the probe JSON it was fitted against (NULL if none applies) and a
 * family's correction (KILN_ENOTFOUND if none). */
const char *kiln_cm_prior_probe(const kiln_device_info *info);
/* The probe of the n-th built-in prior for devices of info's kind (NULL past the last). */
const char *kiln_cm_prior_probe_nth(const kiln_device_info *info, int n);
/* A hash of the prior for devices like info (its probe and corrections). */
uint64_t kiln_cm_prior_hash(const kiln_device_info *info);
/* The name of the device the prior for devices like info was measured on. */
const char *kiln_cm_prior_device(const kiln_device_info *info);
/* The correction of the prior of m's kind measured on the device whose figures
 * (peak, bandwidth, layout-change rate) are nearest to m's. */
int kiln_cm_prior(const kiln_devmodel *m, const char *family, kiln_correction *c);
/* kiln_costmodel_eval on the records of device row dev (described by info),
 * which need not be present. */
int kiln_cm_eval_device(kiln_db *db, int64_t dev, const kiln_device_info *info, const kiln_cm_eval_debug *dbg, kiln_model_eval **out, int *nout,
                        kiln_error *err);
/* Writes prior_cpu.inc or prior_gpu.inc (by info->is_gpu) from the device's
 * probe and records (families with at least KILN_CM_MIN_SAMPLES measured records). */
int kiln_cm_export_prior(kiln_db *db, int64_t device, const kiln_device_info *info, FILE *out, kiln_error *err);

#endif /* KILN_COSTMODEL_H */
