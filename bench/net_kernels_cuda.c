/* bench/net_kernels: the PINN network's device kernels one at a time (kernels/net_cuda_internal.h)
 * on the Poisson 2D benchmark's shape (width 64, K = 4 channels: the value, two first
 * derivatives and the Laplacian; 65,536 points; fp32), each launch timed alone with CUDA events
 * (median of the repetitions), beside what cuBLAS takes for the same products (the cuBLAS
 * path's) and a device-to-device copy of one layer array (the DRAM ceiling, in the same run).
 * It is the benchmark that decides which of them the layers path runs (bench/README: "PINN
 * kernels"), and says where an iteration's time goes without a profiler.
 *
 *   usage: net_kernels [--npts N] [--width W] [--reps R] [--json PATH]
 *
 * The inputs are random (activations in [-1, 1]); the kernels' time does not depend on them. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/net_cuda_internal.h"

#define BENCH_NAME "net_kernels"
#include "bench/bench_cuda.h"

enum { MAXR = 200 };
static int g_reps = 30;
static cudaStream_t g_st;
static cudaEvent_t g_ev[2 * MAXR];

static int cmp(const void *a, const void *b) {
  const float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

typedef struct {
  const char *name, *note;
  double us, bytes, flops;
} row;
static row g_rows[40];
static int g_nrows;

/* Times the work that op issues (3 launches to warm up, then g_reps each between two events). */
#define TIME(nm, nt, by, fl, op)                                                               \
  do {                                                                                         \
    for (int r_ = 0; r_ < 3; ++r_) op;                                                         \
    for (int r_ = 0; r_ < g_reps; ++r_) {                                                      \
      CUDA_OK(cudaEventRecord(g_ev[2 * r_], g_st));                                                 \
      op;                                                                                      \
      CUDA_OK(cudaEventRecord(g_ev[2 * r_ + 1], g_st));                                             \
    }                                                                                          \
    CUDA_OK(cudaStreamSynchronize(g_st));                                                           \
    float ms_[MAXR];                                                                           \
    for (int r_ = 0; r_ < g_reps; ++r_)                                                        \
      CUDA_OK(cudaEventElapsedTime(&ms_[r_], g_ev[2 * r_], g_ev[2 * r_ + 1]));                      \
    qsort(ms_, (size_t)g_reps, sizeof *ms_, cmp);                                              \
    g_rows[g_nrows++] = (row){nm, nt, 1e3 * ms_[g_reps / 2], (double)(by), (double)(fl)};      \
  } while (0)

static float *dev_random(size_t n, float scale, unsigned *seed) {
  float *h = malloc(n * sizeof *h), *d;
  if (!h) exit(1);
  for (size_t k = 0; k < n; ++k) {
    *seed = *seed * 1664525u + 1013904223u;
    h[k] = scale * ((float)(*seed >> 8) / 8388608.0f - 1.0f);
  }
  CUDA_OK(cudaMalloc((void **)&d, n * sizeof *d));
  CUDA_OK(cudaMemcpy(d, h, n * sizeof *d, cudaMemcpyHostToDevice));
  free(h);
  return d;
}

int main(int argc, char **argv) {
  int npts = 65536, w = 64;
  const char *json = NULL;
  for (int k = 1; k < argc; ++k) {
    if (!strcmp(argv[k], "--npts") && k + 1 < argc) npts = atoi(argv[++k]);
    else if (!strcmp(argv[k], "--width") && k + 1 < argc) w = atoi(argv[++k]);
    else if (!strcmp(argv[k], "--reps") && k + 1 < argc) g_reps = atoi(argv[++k]);
    else if (!strcmp(argv[k], "--json") && k + 1 < argc) json = argv[++k];
    else {
      fprintf(stderr, "usage: net_kernels [--npts N] [--width W] [--reps R] [--json PATH]\n");
      return 2;
    }
  }
  if (g_reps < 1 || g_reps > MAXR || npts < 1 || w < 8) {
    fprintf(stderr, "net_kernels: --reps 1..%d, --npts >= 1, --width >= 8\n", MAXR);
    return 2;
  }
  CUDA_OK(cudaStreamCreateWithFlags(&g_st, cudaStreamNonBlocking));
  for (int k = 0; k < 2 * MAXR; ++k) CUDA_OK(cudaEventCreate(&g_ev[k]));
  cublasHandle_t blas;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) return 1;
  cublasSetStream(blas, g_st);
  cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH);

  tsr_net_kdims d;
  memset(&d, 0, sizeof d);
  d.single = 1;
  d.act = 0; /* tanh */
  d.nin = 2;
  d.nd1 = 2;
  d.nd2 = 2;
  d.lap = 1;
  d.K = 4;
  d.width = w;
  for (int j = 0; j < 4; ++j) d.in_scale[j] = 1.0, d.in_shift[j] = 0.0;
  int ok = 0;
  char why[160];
  TSR_OK_OR_DIE(tsr_net_layer_plan(&d, &ok, why, sizeof why));
  if (!ok) {
    fprintf(stderr, "net_kernels: the layers path declines this shape: %s\n", why);
    return 1;
  }
  const int K = d.K, cols = K * npts;
  const size_t plane = (size_t)w * cols, es = sizeof(float);
  unsigned seed = 12345;
  float *W = dev_random((size_t)w * w, 0.125f, &seed), *b = dev_random((size_t)w, 0.3f, &seed);
  float *theta0 = dev_random((size_t)w * 3, 0.5f, &seed), *X = dev_random((size_t)2 * npts, 1.0f, &seed);
  float *Wo = dev_random((size_t)w, 0.125f, &seed), *bo = dev_random(1, 0.3f, &seed);
  float *Zin = dev_random(plane, 1.0f, &seed), *Ain = dev_random(plane, 1.0f, &seed);
  float *dA = dev_random(plane, 1.0f, &seed), *dU = dev_random((size_t)cols, 1.0f, &seed);
  float *A, *Z, *G, *U, *dW, *A0, *Z0;
  CUDA_OK(cudaMalloc((void **)&A, plane * es));
  CUDA_OK(cudaMalloc((void **)&Z, plane * es));
  CUDA_OK(cudaMalloc((void **)&G, plane * es));
  CUDA_OK(cudaMalloc((void **)&U, (size_t)cols * es));
  CUDA_OK(cudaMalloc((void **)&dW, (size_t)w * w * es));
  CUDA_OK(cudaMalloc((void **)&A0, (size_t)w * npts * es));
  CUDA_OK(cudaMalloc((void **)&Z0, plane * es));
  const int nbw = tsr_net_layer_wgrad_blocks(w, npts), nbl = tsr_net_layer_blocks(w, npts);
  size_t pn = (size_t)w * w * nbw;
  if ((size_t)3 * w * tsr_net_cuda_chunks(w, npts) > pn) pn = (size_t)3 * w * tsr_net_cuda_chunks(w, npts);
  float *partial;
  CUDA_OK(cudaMalloc((void **)&partial, pn * es));
  const float one = 1.0f, zero = 0.0f;
  const double L = (double)plane * es; /* one layer array's bytes */
  const double prod = 2.0 * w * (double)w * cols; /* one layer product's FLOP */
  const size_t base0 = 0, base3[3] = {(size_t)2 * w, 0, (size_t)w};

  TIME("copy", "one layer array, device to device", 2 * L, 0,
       CUDA_OK(cudaMemcpyAsync(Z, Zin, (size_t)L, cudaMemcpyDeviceToDevice, g_st)));
  TIME("layer0_fwd", "layer 0 (A_0 value plane, Z_0)", 2.0 * npts * es + L + L / K, 0,
       TSR_OK_OR_DIE(tsr_net_cuda_layer0_fwd(&d, theta0, X, npts, A0, Z0, g_st)));
  TIME("cublas_fwd", "cuBLAS path: A = W Z", 2 * L, prod,
       cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, w, cols, w, &one, W, w, Zin, w, &zero, A, w));
  TIME("act_fwd", "cuBLAS path: Z = s(A + b)", 2 * L, 0,
       TSR_OK_OR_DIE(tsr_net_cuda_act_fwd(&d, b, Ain, npts, Z, g_st)));
  TIME("layer_fwd_AZ", "layers, from Z, A and Z stored (session 17)", 3 * L, prod,
       TSR_OK_OR_DIE(tsr_net_layer_fwd(&d, W, b, Zin, NULL, npts, A, Z, NULL, NULL, NULL, g_st)));
  TIME("layer_fwd_Z", "layers, from Z_0, A stored", 2 * L, prod,
       TSR_OK_OR_DIE(tsr_net_layer_fwd(&d, W, b, Zin, NULL, npts, A, NULL, NULL, NULL, NULL, g_st)));
  TIME("layer_fwd_A", "layers, from A (Z formed as read), A stored", 2 * L, prod,
       TSR_OK_OR_DIE(tsr_net_layer_fwd(&d, W, b, Ain, b, npts, A, NULL, NULL, NULL, NULL, g_st)));
  TIME("layer_fwd_out", "layers, last: from A, A and U stored", 2 * L, prod,
       TSR_OK_OR_DIE(tsr_net_layer_fwd(&d, W, b, Ain, b, npts, A, NULL, Wo, bo, U, g_st)));
  TIME("cublas_out", "cuBLAS: U = W_out Z (+ bias kernel)", L, 2.0 * w * cols, {
    cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, 1, cols, w, &one, Wo, 1, Zin, w, &zero, U, 1);
    TSR_OK_OR_DIE(tsr_net_cuda_bias_out(&d, 1, bo, npts, U, g_st));
  });
  TIME("out_bwd", "last hidden layer's reverse from dU (+ finish)", 2 * L, 0, {
    TSR_OK_OR_DIE(tsr_net_cuda_out_bwd(&d, 1, Wo, dU, 0, b, Ain, npts, G, partial, g_st));
    TSR_OK_OR_DIE(tsr_net_cuda_finish(&d, w, 1, npts, partial, base3 + 1, dW, g_st));
  });
  TIME("out_bwd_wsum", "the same with dW_out (Z formed from A)", 2 * L, 0, {
    TSR_OK_OR_DIE(tsr_net_cuda_out_bwd(&d, 1, Wo, dU, 1, b, Ain, npts, G, partial, g_st));
    TSR_OK_OR_DIE(tsr_net_cuda_finish(&d, w, 2, npts, partial, base3 + 1, dW, g_st));
  });
  TIME("cublas_wout", "cuBLAS: dW_out = dU Z^T", L, 2.0 * w * cols,
       cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, 1, w, cols, &one, dU, 1, Zin, w, &zero, dW, 1));
  TIME("cublas_wgrad", "cuBLAS: dW = dA Z^T", 2 * L, prod,
       cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, w, w, cols, &one, dA, w, Zin, w, &zero, dW, w));
  TIME("layer_wgrad_Z", "layers: dW from dA and Z_0 (partials)", 2 * L, prod,
       TSR_OK_OR_DIE(tsr_net_layer_wgrad(&d, dA, Zin, NULL, npts, partial, g_st)));
  TIME("layer_wgrad_A", "layers: dW from dA and A (Z formed as read)", 2 * L, prod,
       TSR_OK_OR_DIE(tsr_net_layer_wgrad(&d, dA, Ain, b, npts, partial, g_st)));
  TIME("wgrad_finish", "the partials' sums (finish_nb)", (double)w * w * nbw * es, 0,
       TSR_OK_OR_DIE(tsr_net_cuda_finish_nb(&d, w * w, 1, nbw, partial, &base0, dW, g_st)));
  TIME("cublas_dgrad", "cuBLAS path: dZ = W^T dA", 2 * L, prod,
       cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, w, cols, w, &one, W, w, dA, w, &zero, G, w));
  TIME("act_bwd", "cuBLAS path: the chain rule's reverse (in place)", 3 * L, 0,
       TSR_OK_OR_DIE(tsr_net_cuda_act_bwd(&d, b, Ain, npts, G, partial, g_st)));
  TIME("layer_bwd", "layers: dA_prev = chain^T(W^T dA) (+ finish)", 3 * L, prod, {
    TSR_OK_OR_DIE(tsr_net_layer_bwd(&d, W, b, dA, Ain, npts, G, partial, NULL, NULL, NULL, NULL, NULL,
                         g_st));
    TSR_OK_OR_DIE(tsr_net_cuda_finish_nb(&d, w, 1, nbl, partial, &base0, dW, g_st));
  });
  TIME("layer_bwd_out", "layers: the last one, dA formed from dU and A (+ finishes)", 4 * L, prod, {
    TSR_OK_OR_DIE(tsr_net_layer_bwd(&d, W, b, NULL, Ain, npts, G, partial, Wo, dU, Zin, b, A, g_st));
    TSR_OK_OR_DIE(tsr_net_cuda_finish_nb(&d, w, 1, nbl, partial, &base0, dW, g_st));
    TSR_OK_OR_DIE(tsr_net_cuda_finish_nb(&d, w, 2, nbl, partial + (size_t)w * nbl, base3 + 1, dW, g_st));
  });
  TIME("layer1_bwd", "layers: layer 1 into layer 0's partials", L + L / K, prod,
       TSR_OK_OR_DIE(tsr_net_layer_bwd1(&d, W, theta0, X, dA, A0, npts, partial, g_st)));
  CUDA_OK(cudaStreamSynchronize(g_st));

  struct cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  printf("net_kernels: %s, width %d, K %d, %d points, fp32, median of %d launches\n", prop.name,
         w, K, npts, g_reps);
  printf("%-15s %9s %9s %9s  %s\n", "kernel", "us", "GB/s", "TFLOP/s", "what");
  for (int k = 0; k < g_nrows; ++k)
    printf("%-15s %9.1f %9.0f %9.2f  %s\n", g_rows[k].name, g_rows[k].us,
           g_rows[k].bytes / g_rows[k].us * 1e-3, g_rows[k].flops / g_rows[k].us * 1e-6,
           g_rows[k].note);
  if (json) {
    FILE *f = fopen(json, "w");
    if (!f) {
      fprintf(stderr, "net_kernels: cannot write %s\n", json);
      return 1;
    }
    fprintf(f, "{\"device\": \"%s\", \"width\": %d, \"K\": %d, \"npts\": %d, \"reps\": %d, "
               "\"kernels\": [",
            prop.name, w, K, npts, g_reps);
    for (int k = 0; k < g_nrows; ++k)
      fprintf(f, "%s\n {\"name\": \"%s\", \"us\": %.2f, \"bytes\": %.0f, \"flops\": %.0f}",
              k ? "," : "", g_rows[k].name, g_rows[k].us, g_rows[k].bytes, g_rows[k].flops);
    fprintf(f, "]}\n");
    fclose(f);
  }
  return 0;
}
