// Monitor reductions on the device: a fixed grid of blocks walks the owned cells, each block
// reduces its threads in a fixed tree order into one partial, and the host sums the partials
// in block order, so the result does not depend on scheduling.
#include <math.h>

#include "kernels/cuda_util.h"
#include "kernels/reduce.h"

namespace {

constexpr int kBlocks = 1024, kThreads = 256;

struct acc6 {
  double mn, mx, s, sq, es, em;
};

__device__ acc6 merge(acc6 a, acc6 b) {
  return {fmin(a.mn, b.mn), fmax(a.mx, b.mx), a.s + b.s, a.sq + b.sq, a.es + b.es, fmax(a.em, b.em)};
}

template <typename T>
__global__ void norms(const T *__restrict__ u, const T *__restrict__ ex, tsr_box box,
                      tsr_box gbox, ptrdiff_t sy, ptrdiff_t sz, long ncell, double *partial) {
  __shared__ acc6 sh[kThreads];
  acc6 a = {HUGE_VAL, -HUGE_VAL, 0.0, 0.0, 0.0, 0.0};
  bool bad = false;
  int nx = box.hi[0] - box.lo[0], ny = box.hi[1] - box.lo[1];
  for (long c = (long)blockIdx.x * blockDim.x + threadIdx.x; c < ncell;
       c += (long)gridDim.x * blockDim.x) {
    int i = (int)(c % nx);
    long r = c / nx;
    int j = (int)(r % ny), k = (int)(r / ny);
    ptrdiff_t o = (ptrdiff_t)(k + box.lo[2] - gbox.lo[2]) * sz +
                  (ptrdiff_t)(j + box.lo[1] - gbox.lo[1]) * sy + (i + box.lo[0] - gbox.lo[0]);
    double v = (double)u[o];
    if (!isfinite(v)) bad = true;
    a.mn = fmin(a.mn, v);
    a.mx = fmax(a.mx, v);
    a.s += v;
    a.sq += v * v;
    if (ex) {
      double e = fabs(v - (double)ex[o]);
      a.es += e * e;
      a.em = fmax(a.em, e);
    }
  }
  if (bad) {
    a.mn = -HUGE_VAL;
    a.mx = HUGE_VAL;
    a.em = HUGE_VAL;
  }
  sh[threadIdx.x] = a;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) sh[threadIdx.x] = merge(sh[threadIdx.x], sh[threadIdx.x + w]);
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    double *p = partial + 6 * blockIdx.x;
    p[0] = sh[0].mn; p[1] = sh[0].mx; p[2] = sh[0].s; p[3] = sh[0].sq; p[4] = sh[0].es; p[5] = sh[0].em;
  }
}

double *dev_partials = nullptr; /* one small buffer for the process: monitors run one at a time */

}  // namespace

extern "C" tsr_err tsr_reduce_cuda(const tsr_field *u, const tsr_field *exact, int comp,
                                   double *out, cudaStream_t stream) {
  TSR_CHECK(u->mem == TSR_MEM_DEVICE && (!exact || exact->mem == TSR_MEM_DEVICE), TSR_ERR_STATE,
            "tsr_reduce_cuda needs device fields");
  if (!dev_partials) TSR_CUDA(cudaMalloc(&dev_partials, sizeof(double) * 6 * kBlocks));
  long ncell = (long)tsr_box_cells(&u->box);
  TSR_CHECK(!exact || exact->prec == u->prec, TSR_ERR_STATE,
            "tsr_reduce_cuda: the field and the exact solution differ in precision");
  if (u->prec == TSR_PREC_SINGLE) {
    const float *ex = exact ? static_cast<const float *>(exact->data) + comp * exact->scomp : nullptr;
    norms<<<kBlocks, kThreads, 0, stream>>>(static_cast<const float *>(u->data) + comp * u->scomp,
                                             ex, u->box, u->gbox, u->sy, u->sz, ncell, dev_partials);
  } else {
    const double *ex = exact ? static_cast<const double *>(exact->data) + comp * exact->scomp : nullptr;
    norms<<<kBlocks, kThreads, 0, stream>>>(static_cast<const double *>(u->data) + comp * u->scomp,
                                             ex, u->box, u->gbox, u->sy, u->sz, ncell, dev_partials);
  }
  TSR_CUDA_LAUNCHED("monitor reduction");
  static double host[6 * kBlocks];
  TSR_CUDA(cudaMemcpyAsync(host, dev_partials, sizeof host, cudaMemcpyDeviceToHost, stream));
  TSR_CUDA(cudaStreamSynchronize(stream));
  double r[6] = {HUGE_VAL, -HUGE_VAL, 0.0, 0.0, 0.0, 0.0};
  for (int b = 0; b < kBlocks; ++b) {
    const double *p = host + 6 * b;
    r[0] = fmin(r[0], p[0]);
    r[1] = fmax(r[1], p[1]);
    r[2] += p[2];
    r[3] += p[3];
    r[4] += p[4];
    r[5] = fmax(r[5], p[5]);
  }
  out[TSR_NORM_MIN] = r[0];
  out[TSR_NORM_MAX] = r[1];
  out[TSR_NORM_SUM] = r[2];
  out[TSR_NORM_SQ] = r[3];
  out[TSR_NORM_ESQ] = r[4];
  out[TSR_NORM_EMAX] = r[5];
  return TSR_OK;
}
