/* The PINN's loss and Adam on the device (kernels/pinn.h): the per-point code is
 * kernels/pinn_point.h, the host's too. */
#include <cuda_runtime.h>

#include "kernels/cuda_util.h"
#include "kernels/pinn_point.h"

namespace {

constexpr int kThreads = 256;
constexpr int kReduce = 1024;

__global__ void loss_points(tsr_pinn_loss_desc d, const void *U, const double *T,
                            const double *N, const int *F, double *lp, void *dU) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p < d.npts) lp[p] = tsr_pinn_point(&d, p, U, T, N, F, dU);
}

__global__ void iface_points(tsr_pinn_loss_desc d, const void *U, const double *T, const int *F,
                             double *out) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p < d.npts) tsr_pinn_iface_point(&d, p, U, T, F, out + (size_t)p * TSR_PINN_IFACE_NV * d.ncomp);
}

/* One block per term: a fixed stride per thread, then a fixed tree: the same bits every time. */
__global__ void loss_terms(tsr_pinn_loss_desc d, const double *lp, double *loss,
                           const int64_t *it, double *hist, int hist_cap) {
  __shared__ double s[kReduce];
  const tsr_loss_term &t = d.term[blockIdx.x];
  double a = 0.0;
  for (int i = threadIdx.x; i < t.count; i += kReduce) a += lp[t.start + i];
  s[threadIdx.x] = a;
  __syncthreads();
  for (int w = kReduce / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    loss[blockIdx.x] = s[0];
    if (hist) hist[(size_t)(*it % hist_cap) * d.nterm + blockIdx.x] = s[0];
  }
}

template <typename T>
__global__ void adam(tsr_pinn_adam a, int64_t *it, T *theta, const T *g, T *m, T *v) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t t = *it + 1;
  /* the host's adam_scalars, term for term */
  double lr = a.lr * pow(a.decay, (double)t / a.decay_every);
  double bc1 = 1.0 - pow(a.beta1, (double)t);
  double bc2 = 1.0 - pow(a.beta2, (double)t);
  if (i < a.n) {
    const T b1 = (T)a.beta1, b2 = (T)a.beta2;
    m[i] = b1 * m[i] + ((T)1 - b1) * g[i];
    v[i] = b2 * v[i] + ((T)1 - b2) * g[i] * g[i];
    T den = sqrt(v[i]) / (T)sqrt(bc2) + (T)a.eps;
    theta[i] = theta[i] - (T)(lr / bc1) * m[i] / den;
  }
}

/* After every thread of adam read *it: the next step's counter. */
__global__ void step_count(int64_t *it) { *it = *it + 1; }

} // namespace

extern "C" tsr_err tsr_pinn_iface_values_cuda(const tsr_pinn_loss_desc *d, const void *U,
                                              const double *T, const int *F, double *out,
                                              void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  if (d->npts > 0) {
    iface_points<<<(d->npts + kThreads - 1) / kThreads, kThreads, 0, s>>>(*d, U, T, F, out);
    TSR_CUDA_LAUNCHED("iface_points");
  }
  return TSR_OK;
}

extern "C" tsr_err tsr_pinn_loss_cuda(const tsr_pinn_loss_desc *d, const void *U, const double *T,
                                      const double *N, const int *F, double *lp, double *loss,
                                      void *dU, const int64_t *it_dev, double *hist, int hist_cap,
                                      void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  if (d->npts > 0) {
    loss_points<<<(d->npts + kThreads - 1) / kThreads, kThreads, 0, s>>>(*d, U, T, N, F, lp, dU);
    TSR_CUDA_LAUNCHED("loss_points");
  }
  if (d->nterm > 0) {
    loss_terms<<<d->nterm, kReduce, 0, s>>>(*d, lp, loss, it_dev, hist, hist_cap);
    TSR_CUDA_LAUNCHED("loss_terms");
  }
  return TSR_OK;
}

extern "C" tsr_err tsr_pinn_adam_cuda(const tsr_pinn_adam *a, int64_t *it_dev, void *theta,
                                      const void *grad, void *m, void *v, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  unsigned blocks = (unsigned)((a->n + kThreads - 1) / kThreads);
  if (a->n > 0) {
    if (a->single)
      adam<float><<<blocks, kThreads, 0, s>>>(*a, it_dev, (float *)theta, (const float *)grad,
                                              (float *)m, (float *)v);
    else
      adam<double><<<blocks, kThreads, 0, s>>>(*a, it_dev, (double *)theta,
                                               (const double *)grad, (double *)m, (double *)v);
    TSR_CUDA_LAUNCHED("adam");
  }
  step_count<<<1, 1, 0, s>>>(it_dev);
  TSR_CUDA_LAUNCHED("step_count");
  return TSR_OK;
}
