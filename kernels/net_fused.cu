// The fully fused network (kernels/net_cuda_internal.h, tsr_net_fused_*): the plans and the
// launches. The kernels are in kernels/net_fused_cuda.cuh, instantiated one element type per
// part (kernels/net_fused_f32.cu, net_fused_f64.cu: kernels/net_fused_parts.h).
#include "kernels/net_fused_cuda.cuh"

namespace {

kern pick_any(const tsr_net_kdims *d) {
  return d->single ? tsr_net_fused_pick_f32(d->nd1, d->nd2, d->lap)
                   : tsr_net_fused_pick_f64(d->nd1, d->nd2, d->lap);
}

fargs args_of(const tsr_net_fused_plan *pl, const tsr_net_kdims *d) {
  fargs a = {};
  a.d = *d;
  a.nout = pl->nout;
  a.depth = pl->depth;
  a.NUG = pl->NUG;
  a.NPG = pl->NPG;
  a.P = pl->P;
  a.S = pl->S;
  a.nparam = pl->nparam;
  a.lstride = pl->lstride;
  return a;
}

}  // namespace

extern "C" tsr_err tsr_net_fused_make_plan(const tsr_net_kdims *d, int nout, int depth,
                                           int capacity, size_t nparam,
                                           tsr_net_fused_plan *pl) {
  memset(pl, 0, sizeof *pl);
  const kern k = pick_any(d);
  const int W = d->width, es = d->single ? 4 : 8;
  if (!k.fwd) {
    snprintf(pl->why, sizeof pl->why, "no fused kernel for %d first and %d second derivative "
             "channels (%s)", d->nd1, d->nd2, d->lap ? "Laplacian mode" : "diagonal mode");
    return TSR_OK;
  }
  if (W % kTU != 0 || W / kTU > kMaxThreads) {
    snprintf(pl->why, sizeof pl->why, "width %d is not a multiple of %d up to %d", W, kTU,
             kTU * kMaxThreads);
    return TSR_OK;
  }
  const geo g = geometry(W, d->K, k.TP, es);
  const size_t wmax = (size_t)W * (W > nout ? W : nout);
  pl->fwd_smem = ((size_t)W * g.S + wmax) * es;
  pl->bwd_smem = (2 * (size_t)W * g.S + wmax + (size_t)nout * d->K * g.P) * es;
  int dev, nsm = 0;
  size_t optin = 0;
  TSR_CUDA(tsr_cuda_smem_optin(&optin));
  TSR_CUDA(cudaGetDevice(&dev));
  TSR_CUDA(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev));
  if (pl->bwd_smem > optin) {
    snprintf(pl->why, sizeof pl->why, "width %d needs %zu bytes of shared memory a block, the "
             "device has %zu", W, pl->bwd_smem, optin);
    return TSR_OK;
  }
  /* the device's limit, not this network's size: networks of other widths share the kernels */
  TSR_CUDA(cudaFuncSetAttribute(k.fwd, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)optin));
  TSR_CUDA(cudaFuncSetAttribute(k.bwd, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)optin));
  int per_sm = 0;
  TSR_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k.bwd, g.threads,
                                                         pl->bwd_smem));
  if (per_sm < 1) {
    snprintf(pl->why, sizeof pl->why, "the reverse kernel does not fit a multiprocessor");
    return TSR_OK;
  }
  pl->ok = 1;
  pl->NUG = g.NUG;
  pl->NPG = g.NPG;
  pl->P = g.P;
  pl->S = g.S;
  pl->threads = g.threads;
  pl->nout = nout;
  pl->depth = depth;
  pl->nparam = nparam;
  pl->tiles_cap = (capacity + g.P - 1) / g.P;
  pl->lstride = (size_t)pl->tiles_cap * W * d->K * g.P;
  pl->blocks = per_sm * nsm;
  if (pl->blocks > pl->tiles_cap) pl->blocks = pl->tiles_cap;
  return TSR_OK;
}

extern "C" tsr_err tsr_net_fused_forward(const tsr_net_fused_plan *pl, const tsr_net_kdims *d,
                                         const void *theta, const void *X, int npts, void *U,
                                         void *A, cudaStream_t stream) {
  if (npts <= 0) return TSR_OK;
  fargs a = args_of(pl, d);
  a.npts = npts;
  a.ntiles = (npts + pl->P - 1) / pl->P;
  a.theta = theta;
  a.X = X;
  a.U = U;
  a.A = A;
  const kern k = pick_any(d);
  void *argv[] = {&a};
  TSR_CUDA(cudaLaunchKernel(k.fwd, dim3((unsigned)a.ntiles), dim3((unsigned)pl->threads), argv,
                            pl->fwd_smem, stream));
  TSR_CUDA_LAUNCHED("net fused forward");
  return TSR_OK;
}

extern "C" tsr_err tsr_net_fused_backward(const tsr_net_fused_plan *pl, const tsr_net_kdims *d,
                                          const void *theta, const void *X, const void *A,
                                          const void *dU, int npts, void *partial, void *grad,
                                          cudaStream_t stream) {
  if (npts <= 0) return TSR_OK;
  fargs a = args_of(pl, d);
  a.npts = npts;
  a.ntiles = (npts + pl->P - 1) / pl->P;
  a.theta = theta;
  a.X = X;
  a.A = const_cast<void *>(A);
  a.dU = dU;
  a.partial = partial;
  const int nblk = a.ntiles < pl->blocks ? a.ntiles : pl->blocks;
  const kern k = pick_any(d);
  void *argv[] = {&a};
  TSR_CUDA(cudaLaunchKernel(k.bwd, dim3((unsigned)nblk), dim3((unsigned)pl->threads), argv,
                            pl->bwd_smem, stream));
  TSR_CUDA_LAUNCHED("net fused backward");
  const unsigned nb = (unsigned)((pl->nparam + 255) / 256);
  if (d->single)
    fused_finish<float><<<nb, 256, 0, stream>>>(nblk, pl->nparam, (const float *)partial,
                                                (float *)grad);
  else
    fused_finish<double><<<nb, 256, 0, stream>>>(nblk, pl->nparam, (const double *)partial,
                                                 (double *)grad);
  TSR_CUDA_LAUNCHED("net fused gradient sums");
  return TSR_OK;
}
