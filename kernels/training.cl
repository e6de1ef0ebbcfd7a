/* training.cl: the optimizer steps of ai.onnx.preview.training (Adagrad,
 * Momentum, Adam), one work-item per element of one tensor group. The
 * learning rate R and the step count T are read from their buffers.
 * kind: 0 Adagrad, 1 Momentum, 2 Momentum (Nesterov), 3 Adam.
 * c0..c3: Adagrad (norm, epsilon, decay), Momentum (norm, alpha, beta),
 * Adam (norm, alpha, beta, epsilon; c4 norm_coefficient_post). */
__kernel void optim_step(int kind, __global const float *R, __global const long *T, __global const float *x, __global const float *g, __global const float *v,
                         __global const float *h, __global float *xo, __global float *vo, __global float *ho, long n, float c0, float c1, float c2, float c3,
                         float c4) {
  long i = get_global_id(0);
  if (i >= n) return;
  float r = R[0];
  long t = T[0];
  float gr = c0 * x[i] + g[i];
  if (kind == 0) {
    float rr = r / (1.0f + (float)t * c2);
    float hn = h[i] + gr * gr;
    ho[i] = hn;
    xo[i] = x[i] - rr * gr / (sqrt(hn) + c1);
  } else if (kind == 1 || kind == 2) {
    float ba = t > 0 ? c2 : 1.0f;
    float vn = c1 * v[i] + ba * gr;
    vo[i] = vn;
    xo[i] = kind == 1 ? x[i] - r * vn : x[i] - r * (gr + c1 * vn);
  } else {
    float vn = c1 * v[i] + (1.0f - c1) * gr;
    float hn = c2 * h[i] + (1.0f - c2) * (gr * gr);
    float ra = t > 0 ? r * sqrt(1.0f - pown(c2, (int)t)) / (1.0f - pown(c1, (int)t)) : r;
    vo[i] = vn;
    ho[i] = hn;
    xo[i] = (1.0f - c4) * (x[i] - ra * (vn / (sqrt(hn) + c3)));
  }
}
