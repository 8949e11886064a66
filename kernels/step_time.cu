// Stage times on the device (kernels/step_time.h).
#include <cuda_runtime.h>
#include <nccl.h> /* C++ overloads inside: keep it out of the extern "C" block below */

extern "C" {
#include "kernels/cuda_util.h"
#include "kernels/step_time.h"
}

namespace {

// __dmul_rn / __dadd_rn: never contracted into an fma, whatever the compiler's flags, so the
// bits are those of the host's `(double)step * dt` and `t + c * dt`.
__global__ void step_times(int64_t *step, tsr_step_time_coef c, double dt, double *times) {
  const int64_t n = *step;
  const double t = __dmul_rn((double)n, dt);
  for (int k = 0; k < c.n; ++k) times[k] = __dadd_rn(t, __dmul_rn(c.c[k], dt));
  *step = n + 1;
}

__global__ void set_step(int64_t *step, int64_t value) { *step = value; }

}  // namespace

extern "C" tsr_err tsr_step_time_cuda(int64_t *step, const tsr_step_time_coef *c, double dt,
                                      double *times, cudaStream_t s) {
  TSR_CHECK(c && c->n >= 1 && c->n <= TSR_STEP_TIME_MAX, TSR_ERR_INTERNAL,
            "tsr_step_time_cuda: %d stages (1 to %d)", c ? c->n : 0, TSR_STEP_TIME_MAX);
  step_times<<<1, 1, 0, s>>>(step, *c, dt, times);
  TSR_CUDA_LAUNCHED("stage time kernel");
  return TSR_OK;
}

extern "C" tsr_err tsr_step_time_set_cuda(int64_t *step, int64_t value, cudaStream_t s) {
  set_step<<<1, 1, 0, s>>>(step, value);
  TSR_CUDA_LAUNCHED("step counter kernel");
  return TSR_OK;
}
