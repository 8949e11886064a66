// Ghost layers of the physical boundary on the device: one thread per face point and
// component, the same tsr_ghost_value as the host.
#include "kernels/boundary.h"
#include "kernels/cuda_util.h"

namespace {

template <typename T>
__global__ void apply(tsr_bc_face fc, const double *__restrict__ vals, T *__restrict__ u,
                      tsr_box box, tsr_box gbox, ptrdiff_t sy, ptrdiff_t sz, ptrdiff_t sc,
                      int ghost, int ncomp) {
  long n = (long)fc.n1 * fc.n2;
  long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n * ncomp) return;
  int q = (int)(t / n);
  long ab = t - (long)q * n;
  int a = (int)(ab % fc.n1), b = (int)(ab / fc.n1);
  double g = vals[t];
  int idx[3];
  idx[fc.t1] = box.lo[fc.t1] + a;
  idx[fc.t2] = box.lo[fc.t2] + b;
  int d = fc.axis;
  for (int l = 1; l <= ghost; ++l) {
    int gi[3] = {idx[0], idx[1], idx[2]}, mi[3] = {idx[0], idx[1], idx[2]};
    gi[d] = fc.side == 0 ? box.lo[d] - l : box.hi[d] - 1 + l;
    mi[d] = fc.side == 0 ? box.lo[d] + l - 1 : box.hi[d] - l;
    ptrdiff_t go = q * sc + (gi[2] - gbox.lo[2]) * sz + (gi[1] - gbox.lo[1]) * sy + (gi[0] - gbox.lo[0]);
    ptrdiff_t mo = q * sc + (mi[2] - gbox.lo[2]) * sz + (mi[1] - gbox.lo[1]) * sy + (mi[0] - gbox.lo[0]);
    u[go] = (T)tsr_ghost_value(fc.type, g, (double)u[mo], l, fc.h);
  }
}

}  // namespace

extern "C" tsr_err tsr_bc_apply_cuda(const tsr_bc_face *face, const double *vals, tsr_field *f,
                                     cudaStream_t stream) {
  TSR_CHECK(f->mem == TSR_MEM_DEVICE, TSR_ERR_STATE, "tsr_bc_apply_cuda needs a device field");
  long n = (long)face->n1 * face->n2 * f->ncomp;
  if (n == 0 || f->ghost == 0) return TSR_OK;
  int threads = 256;
  long blocks = (n + threads - 1) / threads;
  if (f->prec == TSR_PREC_SINGLE)
    apply<<<(unsigned)blocks, threads, 0, stream>>>(*face, vals, static_cast<float *>(f->data),
                                                    f->box, f->gbox, f->sy, f->sz, f->scomp,
                                                    f->ghost, f->ncomp);
  else
    apply<<<(unsigned)blocks, threads, 0, stream>>>(*face, vals, static_cast<double *>(f->data),
                                                    f->box, f->gbox, f->sy, f->sz, f->scomp,
                                                    f->ghost, f->ncomp);
  TSR_CUDA_LAUNCHED("boundary ghost fill");
  return TSR_OK;
}
