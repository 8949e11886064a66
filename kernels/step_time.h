/* The stage times of a step computed on the device, for CUDA graphs of whole steps
 * (solver/graph.h): a replayed graph repeats its kernels' arguments, so the time cannot be
 * one of them; it lives in device memory, written by the graph's first kernel from a step
 * counter that the same kernel advances. CUDA builds only. */
#ifndef TSR_STEP_TIME_H
#define TSR_STEP_TIME_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TSR_STEP_TIME_MAX 4

/* The stage offsets of a scheme: stage s of the step from t runs at t + c[s] * dt. */
typedef struct {
  int n;
  double c[TSR_STEP_TIME_MAX];
} tsr_step_time_coef;

/* Enqueues on s one thread that reads n = *step, writes times[k] = t + c[k] * dt with
 * t = (double)n * dt, each operation rounded once to nearest (the bits the host's solver/explicit.c
 * computes with contraction off), and sets *step = n + 1. Errors: TSR_ERR_INTERNAL (n out of
 * range), TSR_ERR_CUDA (launch). */
tsr_err tsr_step_time_cuda(int64_t *step, const tsr_step_time_coef *c, double dt, double *times,
                           cudaStream_t s);

/* Enqueues on s a kernel that sets *step = value. Errors: TSR_ERR_CUDA (launch). */
tsr_err tsr_step_time_set_cuda(int64_t *step, int64_t value, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
