/* The fully fused network's kernels, one part per element type (kernels/net_fused_f32.cu,
 * kernels/net_fused_f64.cu), for kernels/net_fused.cu: the forward and reverse kernels of a
 * channel set (first and second derivative channels nd1, nd2, Laplacian mode lap), or
 * nullptrs where the fused path has none. C++ linkage: a part whose signature drifts fails to
 * link. */
#ifndef TSR_NET_FUSED_PARTS_H
#define TSR_NET_FUSED_PARTS_H

struct tsr_net_fused_kern {
  const void *fwd, *bwd; /* __global__ functions, for cudaLaunchKernel */
  int TP;                /* points a thread owns */
};

tsr_net_fused_kern tsr_net_fused_pick_f32(int nd1, int nd2, int lap);
tsr_net_fused_kern tsr_net_fused_pick_f64(int nd1, int nd2, int lap);

#endif
