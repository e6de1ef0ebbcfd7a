/* tfidf.cl: TfIdfVectorizer, one work-item per (row, pool n-gram): counts
 * the n-gram's occurrences in the row, its items spaced d = 1 .. max skip +
 * 1 apart (unigrams once, at d = 1), and writes the row's column for it
 * (TF: the count; IDF: the weight where the count is not 0; TFIDF: count x
 * weight). XT is the input's element type. */
__kernel void tfidf(__global const XT *x, __global const long *pool, __global const int *gn, __global const int *goff, __global const int *gcol,
                    __global const float *w, __global float *y, long len, long ncols, int ngrams, int maxd, int mode) {
  long j = get_global_id(0), row = get_global_id(1);
  if (j >= ngrams) return;
  __global const XT *xr = x + row * len;
  int n = gn[j];
  __global const long *p = pool + goff[j];
  long cnt = 0;
  for (int d = 1; d <= (n == 1 ? 1 : maxd); d++)
    for (long i = 0; i + (long)(n - 1) * d < len; i++) {
      int ok = 1;
      for (int k = 0; k < n && ok; k++) ok = (long)xr[i + (long)k * d] == p[k];
      cnt += ok;
    }
  float v = mode == 0 ? (float)cnt : mode == 1 ? (cnt ? w[j] : 0.0f) : (float)cnt * w[j];
  y[row * ncols + gcol[j]] = v;
}
