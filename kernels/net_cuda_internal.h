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
  int lap;                         /* 1: channel 1 + nd1 is the Laplacian of the nd2 second
                                      derivatives (shape.lap with nd2 > 0), K = 2 + nd1 */
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
 * channels W0(:, j) in_scale[j] and second-derivative (or Laplacian) channels 0 (neither is
 * stored). theta is
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

/* The last hidden layer (l = depth - 1 >= 1) in reverse straight from the output layer's dU
 * (nout x K npts) and weights Wout (nout x width): as tsr_net_cuda_act_bwd with G's input
 * W_out^T dU formed point by point instead of read, so that it never crosses DRAM; G gets
 * dL/dA_l. With wsum (nout 1 only) the output layer's weight gradient as a second sum a
 * unit (partials from width * tsr_net_cuda_chunks(width, npts) on: finish 2 sums), from Z_l
 * formed from A, so that Z_l need not be stored. */
tsr_err tsr_net_cuda_out_bwd(const tsr_net_kdims *d, int nout, const void *Wout, const void *dU,
                             int wsum, const void *b, const void *A, int npts, void *G,
                             void *partial, cudaStream_t stream);

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

/* The same for nb partials a sum (the layers path's reverse kernel: tsr_net_layer_blocks). */
tsr_err tsr_net_cuda_finish_nb(const tsr_net_kdims *d, int rows, int nsums, int nb,
                               const void *partial, const size_t *base, void *out,
                               cudaStream_t stream);

/* ---- the layers path (kernels/net_layer.cu) ------------------------------------------------
 * fp32: each hidden layer l >= 1 one kernel forward (A_l = W_l Z_(l-1) over all K channels,
 * and Z_l where a product reads it; with TSR_NET_WGRAD=1 Z_(l-1) is formed from A_(l-1) as the
 * tile is read instead, no Z beyond Z_0 stored; the last hidden layer's kernel computes a
 * single output too) and one in reverse (dL/dZ_(l-1) =
 * W_l^T dA_l, then the chain rule's reverse at A_(l-1) in its epilogue, with the bias partials
 * of layer l - 1; for l = 1 layer 0's reverse and its parameters' partials); the weight
 * gradients of layers 1.. by cuBLAS from the stored Z (or with TSR_NET_WGRAD=1 from dA_l and
 * A_(l-1) in a kernel of their own, Z formed as read); with a single output the output
 * layer's reverse and weight gradient inside the last hidden layer's reverse kernel (depth
 * >= 3) or tsr_net_cuda_out_bwd (depth 2), else as on the cuBLAS path (the last Z stored).
 * Where it applies: float; width 8, 16, 32, 64 or 128; (nd1, nd2) (0, 0), or with lap the
 * PINN's sets (1, 1), (2, 2), (3, 3), (2, 1), (3, 2), (4, 3); the block's shared memory within
 * the device's. */

/* *ok 1 where it applies (and the kernels' shared-memory limits set: call outside a capture),
 * else 0 with why (n bytes) saying why not. Errors: TSR_ERR_CUDA. */
tsr_err tsr_net_layer_plan(const tsr_net_kdims *d, int *ok, char *why, size_t n);

/* Blocks of the kernels over npts points (each block's partials: one a unit and sum). At most
 * 264 and never more than tsr_net_cuda_chunks(width, npts), so the partials fit the cuBLAS
 * path's buffer. */
int tsr_net_layer_blocks(int width, int npts);

/* A = W Zin (all channels, without the bias). Zin: layer l - 1's Z, or where bin is not null
 * its pre-activation A (Z = s(A + bin) formed as it is read, so that the layers path stores no
 * Z). Z = s(A + b) by the chain rule where Z is not null. Where U is not null, the output layer
 * of one output too: U (K x npts) = Wout Z + bout (bout on the value channel). W: the layer's
 * width x width weights, column-major (kernels/net.h). */
tsr_err tsr_net_layer_fwd(const tsr_net_kdims *d, const void *W, const void *b, const void *Zin,
                          const void *bin, int npts, void *A, void *Z, const void *Wout,
                          const void *bout, void *U, cudaStream_t stream);

/* Blocks of tsr_net_layer_wgrad over npts points (its partials: one an entry of dW). */
int tsr_net_layer_wgrad_blocks(int width, int npts);

/* A hidden layer's weight gradient dW = dA Zin^T (width x width, column-major as W) as the
 * blocks' partials, partial[(i + k width) * tsr_net_layer_wgrad_blocks(width, npts) + block]
 * (finish with tsr_net_cuda_finish_nb). Zin as tsr_net_layer_fwd's (Z_0, or with bin the
 * layer below's A). */
tsr_err tsr_net_layer_wgrad(const tsr_net_kdims *d, const void *dA, const void *Zin,
                            const void *bin, int npts, void *partial, cudaStream_t stream);

/* dAprev = the reverse of layer l - 1's chain rule (at Aprev + bprev) applied to W^T dA, with
 * W and dA layer l's; partial[i * tsr_net_layer_blocks(width, npts) + block]: the blocks' sums
 * of dAprev's value channel (finish with tsr_net_cuda_finish_nb). Where dU is not null (one
 * output, l the last hidden layer), dA is not read but formed as tsr_net_cuda_out_bwd forms it
 * from Wout, dU and layer l's Aout and bout, and written to Gout; the blocks' sums of layer
 * l's bias and of W_out's gradient follow at partial + width * blocks (2 sums). */
tsr_err tsr_net_layer_bwd(const tsr_net_kdims *d, const void *W, const void *bprev,
                          const void *dA, const void *Aprev, int npts, void *dAprev,
                          void *partial, const void *Wout, const void *dU, const void *Aout,
                          const void *bout, void *Gout, cudaStream_t stream);

/* Layer 1 in reverse into layer 0: dL/dZ_0 = W^T dA (W and dA layer 1's), then layer 0's chain
 * rule in reverse at A0 (tsr_net_cuda_layer0_fwd's value plane) with X (nin x npts) and theta0
 * (the parameter vector: W0 then b0), straight to the partials of layer 0's 1 + nin sums a unit
 * as tsr_net_cuda_layer0_bwd writes them, tsr_net_layer_blocks(width, npts) a sum (finish with
 * tsr_net_cuda_finish_nb): dL/dZ_0 never crosses DRAM. */
tsr_err tsr_net_layer_bwd1(const tsr_net_kdims *d, const void *W, const void *theta0,
                           const void *X, const void *dA, const void *A0, int npts,
                           void *partial, cudaStream_t stream);


/* ---- the fused path (kernels/net_fused.cu) ------------------------------------------------
 * One kernel for the whole forward pass and one for the whole reverse pass, each block on a
 * tile of P points with every layer's activations in shared memory
 * (kernels/net_fused_cuda.cuh says how).
 * Memory it needs besides theta, X, U, dU and grad (device, element type of d->single):
 *   A        the hidden layers' pre-activations, layer l (1..depth-1) at A + (l-1) lstride
 *   partial  blocks * nparam elements: the reverse pass's per-block gradient sums */
typedef struct {
  int ok;            /* the fused path applies to this network on this device */
  char why[160];     /* else: why not */
  int NUG, NPG, P, S, threads; /* the tile: unit groups, point groups, points, row stride */
  int nout, depth;
  int tiles_cap;     /* tiles of the capacity */
  int blocks;        /* most blocks of the reverse pass (its per-block partial sums) */
  size_t nparam, lstride, fwd_smem, bwd_smem;
} tsr_net_fused_plan;

/* Decides whether the fused kernels apply (the channel sets (0,0), (1,1), (2,2), (3,3), (2,1),
 * (3,2), (4,3) of (nd1, nd2), in either mode; width a multiple of 4 up to 1024; the reverse pass's tile fits
 * the device's shared memory) and fills the plan for a capacity of `capacity` points; sets the
 * kernels' shared-memory limits (call outside a graph capture). pl->ok 0 with pl->why set is
 * no error. Errors: TSR_ERR_CUDA. */
tsr_err tsr_net_fused_make_plan(const tsr_net_kdims *d, int nout, int depth, int capacity,
                                size_t nparam, tsr_net_fused_plan *pl);

/* The forward pass over npts points (0..capacity): U from theta and X; A kept for the reverse
 * pass. Asynchronous on stream, no allocation. */
tsr_err tsr_net_fused_forward(const tsr_net_fused_plan *pl, const tsr_net_kdims *d,
                              const void *theta, const void *X, int npts, void *U, void *A,
                              cudaStream_t stream);

/* The reverse pass of the forward pass over the same npts, theta, X (and its A): grad
 * (nparam elements) overwritten. Asynchronous on stream, no allocation. */
tsr_err tsr_net_fused_backward(const tsr_net_fused_plan *pl, const tsr_net_kdims *d,
                               const void *theta, const void *X, const void *A, const void *dU,
                               int npts, void *partial, void *grad, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
