/* Private to kernels/net_cuda.c and kernels/net.cu: the launchers of the network's elementwise
 * and reduction kernels (the matrix products are cuBLAS calls in net_cuda.c). Every launcher
 * issues its work on `stream`, allocates nothing and does not synchronise, so a forward or
 * backward pass can be captured in a CUDA graph. Arrays are device memory of float when
 * d->single, else double; layouts are kernels/net.h's (a layer's array: unit i, channel c,
 * point p at i + rows * (c * npts + p)). */
#ifndef TSR_NET_CUDA_INTERNAL_H
#define TSR_NET_CUDA_INTERNAL_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What every kernel needs to know of the network (copied into kernel parameters). */
typedef struct {
  int single;                      /* float, else double */
  int act;                         /* tsr_net_act */
  int nin, nd1, nd2, K;            /* inputs and channels (kernels/net.h) */
  int width;                       /* units of a hidden layer */
  double in_scale[4], in_shift[4]; /* xhat_j = in_scale[j] * x_j + in_shift[j] */
} tsr_net_kdims;

/* Most sums one reduction produces per unit: layer 0's bias and its nin weight columns. */
#define TSR_NET_MAX_SUMS 5

/* Blocks over the points of one reduction (a function of npts and the rows alone, so the sums'
 * order, hence their bits, depend on nothing else) and the partial sums it needs:
 * rows * nsums * tsr_net_cuda_chunks(...) elements. */
int tsr_net_cuda_chunks(int rows, int npts);

/* Layer 0 and its activation: A0's value channel = W0 xhat (without the bias: every kernel
 * adds it where it reads A), Z0's channels by the chain rule with A0's first-derivative
 * channels W0(:, j) in_scale[j] and second-derivative channels 0 (neither is stored). theta is
 * the whole parameter vector; X is nin x npts. */
tsr_err tsr_net_cuda_layer0_fwd(const tsr_net_kdims *d, const void *theta, const void *X,
                                int npts, void *A0, void *Z0, cudaStream_t stream);

/* A hidden layer's activation: Z from A (= W Z_prev, all K channels) and the bias b. */
tsr_err tsr_net_cuda_act_fwd(const tsr_net_kdims *d, const void *b, const void *A, int npts,
                             void *Z, cudaStream_t stream);

/* The output layer's bias on U's value channel (nout x npts, the first block of U). */
tsr_err tsr_net_cuda_bias_out(const tsr_net_kdims *d, int nout, const void *b, int npts,
                              void *U, cudaStream_t stream);

/* A hidden layer l >= 1 in reverse: G holds dL/dZ_l on entry and dL/dA_l on return (in place);
 * the bias gradient's partial sums go to partial (tsr_net_cuda_chunks(width, npts) per unit).
 * Finish them with tsr_net_cuda_finish. */
tsr_err tsr_net_cuda_act_bwd(const tsr_net_kdims *d, const void *b, const void *A, int npts,
                             void *G, void *partial, cudaStream_t stream);

/* Layer 0 in reverse, from G = dL/dZ_0: the partial sums of db0 (sum 0) and of dW0(:, j)
 * (sum 1 + j: dA0 xhat_j + in_scale[j] dA_j, point by point). G is left unchanged. */
tsr_err tsr_net_cuda_layer0_bwd(const tsr_net_kdims *d, const void *theta, const void *X,
                                const void *A0, const void *G, int npts, void *partial,
                                cudaStream_t stream);

/* Partial sums over the points of rows x npts (column-major, leading dimension rows): the
 * output layer's bias gradient from dU's value channel. */
tsr_err tsr_net_cuda_rowsum(const tsr_net_kdims *d, int rows, const void *M, int npts,
                            void *partial, cudaStream_t stream);

/* Sums the partials of nsums sums of `rows` units each (in a fixed tree) and writes sum s of
 * unit i to out[base[s] + i]. */
tsr_err tsr_net_cuda_finish(const tsr_net_kdims *d, int rows, int nsums, int npts,
                            const void *partial, const size_t *base, void *out,
                            cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
