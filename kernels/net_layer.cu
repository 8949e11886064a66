// The "layers" path of the network's device backend (kernels/net.h, kernels/net_cuda.c): each
// hidden layer's product with the weights and its chain rule in one kernel, forward and
// reverse, so that a layer's K channels cross DRAM once instead of three times (product out,
// chain rule in, chain rule out). The hidden layers' weight gradients are cuBLAS products by
// default: layer_wgrad (TSR_NET_WGRAD=1) measured slower (bench/net_kernels).
//
// A block takes a tile of P points with all K channels of every unit: the layer's weights
// (w x w) and the input tile (K channels x P points x w units, as in global memory, rows padded
// by 4 floats) are staged in shared memory, and each thread accumulates 4 consecutive units x
// 4 points (ty + ny pp) x K channels in registers (fp32 FMA; per 4 k, 4 + 4K float4 loads for
// 64K FMA), so that the epilogue has every channel of its (unit, point) pairs:
//   forward  A = W Zin (no bias: every reader adds it), Z = s(A + b) by the chain rule where
//            a product reads Z; the last hidden layer U = W_out Z + b_out instead (one
//            output); Zin may be the layer below's A, its Z formed as the tile is read;
//   reverse  G = W^T dA, then dA_prev = the chain rule's reverse at A_prev (+ b_prev), and the
//            block's sum of dA_prev's value channel over its points per unit (the bias
//            gradient's partial, summed again by tsr_net_cuda_finish_nb in a fixed order); the
//            last hidden layer's forms its dA from the output layer's dU as it stages it;
//   layer 1  G = W_1^T dA_1, then layer 0's reverse to the block's sums of its bias and
//            weight columns (layer1_bwd; dL/dZ_0 is never stored);
//   weights  dW = dA Zin^T as blocks' partials (layer_wgrad, 8 x 8 of dW a thread).
// Threads: w / 4 along the units (float4 loads and stores of 4 units), 256 / (w / 4) along the
// points; widths 8, 16, 32, 64 and 128 (the weight gradient takes 8 x 8 blocks of dW).
// Blocks walk their tiles in order (at most 264 blocks). For width 64 and K = 4 a block takes
// 128 registers a thread and 85 KB, two blocks a multiprocessor; copying the next tile with
// cp.async into a second buffer (one block a multiprocessor) measured 3% slower (bench/README).
// Every sum runs in a fixed order, so a call repeats its bits; they differ from the cuBLAS
// path's by rounding (another summation order of the same products).
#include <stdio.h>

#include "kernels/cuda_util.h"
#include "kernels/net.h"
#include "kernels/net_cuda_internal.h"
#include "kernels/net_layer.cuh"

namespace {

struct kernels {
  const void *fwd, *bwd, *bwd1, *wgrad, *bwdo;
};

template <int ACT, int ND1, int ND2, int LAP>
kernels of() {
  return {(const void *)&layer_fwd<ACT, ND1, ND2, LAP>,
          (const void *)&layer_bwd<ACT, ND1, ND2, LAP, 0>,
          (const void *)&layer1_bwd<ACT, ND1, ND2, LAP>,
          (const void *)&layer_wgrad<ACT, ND1, ND2, LAP>,
          (const void *)&layer_bwd<ACT, ND1, ND2, LAP, 1>};
}
template <int ND1, int ND2, int LAP>
kernels pick_act(int act) {
  return act == 0 ? of<0, ND1, ND2, LAP>() : of<1, ND1, ND2, LAP>();
}

// The channel sets the PINN method uses (values alone; steady 1-3 D; 1-3 D + t, the Laplacian as
// one channel); others take the cuBLAS path.
kernels pick(const tsr_net_kdims *d) {
  const int lap = d->lap;
  if (d->nd1 == 0 && d->nd2 == 0) return pick_act<0, 0, 0>(d->act);
  if (!lap) return {nullptr, nullptr, nullptr, nullptr, nullptr};
  switch (d->nd1 * 10 + d->nd2) {
  case 11: return pick_act<1, 1, 1>(d->act);
  case 22: return pick_act<2, 2, 1>(d->act);
  case 33: return pick_act<3, 3, 1>(d->act);
  case 21: return pick_act<2, 1, 1>(d->act);
  case 32: return pick_act<3, 2, 1>(d->act);
  case 43: return pick_act<4, 3, 1>(d->act);
  default: return {nullptr, nullptr, nullptr, nullptr, nullptr};
  }
}

bool width_fits(int w) {
  return w >= 8 && w <= kMaxWidth && w % 4 == 0 && kThreads % (w / 4) == 0;
}

} // namespace

extern "C" int tsr_net_layer_blocks(int width, int npts) { return layer_blocks(width, npts); }

extern "C" tsr_err tsr_net_layer_plan(const tsr_net_kdims *d, int *ok, char *why, size_t n) {
  *ok = 0;
  if (!d->single) return snprintf(why, n, "double precision"), TSR_OK;
  if (!width_fits(d->width))
    return snprintf(why, n, "width %d (a power of two from 8 to %d)", d->width, kMaxWidth),
           TSR_OK;
  kernels k = pick(d);
  if (!k.fwd)
    return snprintf(why, n, "channels (nd1 %d, nd2 %d, lap %d)", d->nd1, d->nd2, d->lap), TSR_OK;
  const size_t bytes = smem_bytes(d->width, d->K), wbytes = wgrad_smem_bytes(d->width, d->K);
  size_t optin = 0;
  TSR_CUDA(tsr_cuda_smem_optin(&optin));
  if (bytes > optin || wbytes > optin)
    return snprintf(why, n, "%zu bytes of shared memory a block (the device has %zu)",
                    bytes > wbytes ? bytes : wbytes, optin), TSR_OK;
  TSR_CUDA(cudaFuncSetAttribute(k.fwd, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
  TSR_CUDA(cudaFuncSetAttribute(k.bwd, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
  TSR_CUDA(cudaFuncSetAttribute(k.bwd1, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
  TSR_CUDA(cudaFuncSetAttribute(k.bwdo, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
  TSR_CUDA(cudaFuncSetAttribute(k.wgrad, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)wbytes));
  *ok = 1;
  return TSR_OK;
}

extern "C" tsr_err tsr_net_layer_fwd(const tsr_net_kdims *d, const void *W, const void *b,
                                     const void *Zin, const void *bin, int npts, void *A, void *Z,
                                     const void *Wout, const void *bout, void *U,
                                     cudaStream_t stream) {
  if (npts <= 0) return TSR_OK;
  kernels k = pick(d);
  TSR_CHECK(k.fwd && d->single, TSR_ERR_STATE, "tsr_net_layer_fwd: not planned for this network");
  const int w = d->width;
  int nn = npts;
  fwd_out out = {(const float *)Wout, (const float *)bout, (float *)U};
  void *args[] = {(void *)&w,   (void *)&nn, (void *)&W, (void *)&b,  (void *)&Zin,
                  (void *)&bin, (void *)&A,  (void *)&Z, (void *)&out};
  TSR_CUDA(cudaLaunchKernel(k.fwd, dim3((unsigned)tsr_net_layer_blocks(w, npts)), dim3(kThreads),
                            args, smem_bytes(w, d->K), stream));
  return TSR_OK;
}

extern "C" int tsr_net_layer_wgrad_blocks(int width, int npts) {
  return wgrad_blocks(width, npts);
}

extern "C" tsr_err tsr_net_layer_wgrad(const tsr_net_kdims *d, const void *dA, const void *Zin,
                                       const void *bin, int npts, void *partial,
                                       cudaStream_t stream) {
  if (npts <= 0) return TSR_OK;
  kernels k = pick(d);
  TSR_CHECK(k.wgrad && d->single, TSR_ERR_STATE,
            "tsr_net_layer_wgrad: not planned for this network");
  const int w = d->width;
  int nn = npts;
  void *args[] = {(void *)&w, (void *)&nn, (void *)&dA, (void *)&Zin, (void *)&bin,
                  (void *)&partial};
  TSR_CUDA(cudaLaunchKernel(k.wgrad, dim3((unsigned)wgrad_blocks(w, npts)), dim3(kThreads), args,
                            wgrad_smem_bytes(w, d->K), stream));
  return TSR_OK;
}

extern "C" tsr_err tsr_net_layer_bwd(const tsr_net_kdims *d, const void *W, const void *bprev,
                                     const void *dA, const void *Aprev, int npts, void *dAprev,
                                     void *partial, const void *Wout, const void *dU,
                                     const void *Aout, const void *bout, void *Gout,
                                     cudaStream_t stream) {
  if (npts <= 0) return TSR_OK;
  kernels k = pick(d);
  TSR_CHECK(k.bwd && d->single, TSR_ERR_STATE, "tsr_net_layer_bwd: not planned for this network");
  const int w = d->width;
  int nn = npts;
  bwd_out out = {(const float *)Wout, (const float *)dU, (const float *)Aout, (const float *)bout,
                 (float *)Gout};
  void *args[] = {(void *)&w,     (void *)&nn,     (void *)&W,      (void *)&bprev, (void *)&dA,
                  (void *)&Aprev, (void *)&dAprev, (void *)&partial, (void *)&out};
  TSR_CUDA(cudaLaunchKernel(dU ? k.bwdo : k.bwd, dim3((unsigned)tsr_net_layer_blocks(w, npts)),
                            dim3(kThreads), args, smem_bytes(w, d->K), stream));
  return TSR_OK;
}

extern "C" tsr_err tsr_net_layer_bwd1(const tsr_net_kdims *d, const void *W, const void *theta0,
                                      const void *X, const void *dA, const void *A0, int npts,
                                      void *partial, cudaStream_t stream) {
  if (npts <= 0) return TSR_OK;
  kernels k = pick(d);
  TSR_CHECK(k.bwd1 && d->single, TSR_ERR_STATE,
            "tsr_net_layer_bwd1: not planned for this network");
  const int w = d->width;
  int nn = npts, nin = d->nin;
  in_map xm;
  for (int j = 0; j < 4; ++j) {
    xm.scale[j] = (float)d->in_scale[j];
    xm.shift[j] = (float)d->in_shift[j];
  }
  void *args[] = {(void *)&w,  (void *)&nn,  (void *)&nin, (void *)&W,      (void *)&theta0,
                  (void *)&X,  (void *)&xm,  (void *)&dA,  (void *)&A0,     (void *)&partial};
  TSR_CUDA(cudaLaunchKernel(k.bwd1, dim3((unsigned)tsr_net_layer_blocks(w, npts)), dim3(kThreads),
                            args, smem_bytes(w, d->K), stream));
  return TSR_OK;
}
