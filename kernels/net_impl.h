/* Private to kernels/net*.c: the network handle shared by the host backend (kernels/net.c) and
 * the CUDA backend (kernels/net_cuda.c, kernels/net.cu). */
#ifndef TSR_NET_IMPL_H
#define TSR_NET_IMPL_H

#include "kernels/net.h"

struct tsr_net {
  tsr_net_opts o;
  int K;            /* channels, tsr_net_channels */
  size_t nparam;
  int forwarded;    /* a forward pass was made: the backward pass may run */
  int npts;         /* points of the last forward pass */
  void *host;       /* the host backend's workspace (kernels/net.c) */
  void *dev;        /* the CUDA backend's workspace (kernels/net_cuda.c) */
};

#ifdef TSR_HAVE_CUDA
/* The CUDA backend behind tsr_net_create/forward/backward/destroy when o.device: same
 * contracts as those (kernels/net.h); n->o, K, nparam are set before create. kernels/net.c
 * checks the options, npts and the forward-before-backward order, and keeps forwarded and npts
 * (npts set before tsr_net_cuda_forward); tsr_net_destroy calls tsr_net_cuda_destroy whenever
 * n->dev is not NULL, also after a failed tsr_net_cuda_create. */
tsr_err tsr_net_cuda_create(struct tsr_net *n);
tsr_err tsr_net_cuda_forward(struct tsr_net *n, const void *theta, const void *X, int npts,
                             void *U);
tsr_err tsr_net_cuda_backward(struct tsr_net *n, const void *theta, const void *dU, void *grad);
void tsr_net_cuda_destroy(struct tsr_net *n);
/* "fused" or "cublas": the path tsr_net_cuda_create chose. */
const char *tsr_net_cuda_path(const struct tsr_net *n);
#endif

#endif
