/* What the CUDA benchmarks share: a failed CUDA or tessera call stops the program with the
 * call, the reason and where (a benchmark that goes on past one would time nothing), and the
 * median of repeated timings. The including file defines BENCH_NAME, its program's name, and
 * includes cuda_runtime_api.h and a tessera header (io/error.h's tsr_err_message) first. */
#ifndef TSR_BENCH_CUDA_H
#define TSR_BENCH_CUDA_H

#include <stdio.h>
#include <stdlib.h>

#define CUDA_OK(call)                                                                          \
  do {                                                                                         \
    cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) {                                                                   \
      fprintf(stderr, BENCH_NAME ": %s: %s (%s:%d)\n", #call, cudaGetErrorString(e_), __FILE__, \
              __LINE__);                                                                       \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

#define TSR_OK_OR_DIE(call)                                                                    \
  do {                                                                                         \
    if ((call) != TSR_OK) {                                                                    \
      fprintf(stderr, BENCH_NAME ": %s: %s\n", #call, tsr_err_message());                      \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

static inline int bench_cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of t[0..n-1] (n >= 1), which it sorts. */
static inline double bench_median(double *t, int n) {
  qsort(t, (size_t)n, sizeof(double), bench_cmp_double);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

#endif
