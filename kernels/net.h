/* Multilayer perceptrons for the PINN method, with Taylor-mode derivatives carried forward
 * and parameter gradients by reverse mode through that forward pass (DESIGN.md, PINN method).
 *
 * A network maps nin inputs (the space axes, then t when the case has time) to nout outputs
 * (the solution's components) through `depth` hidden layers of `width` units with activation
 * tanh or sin, and a linear output layer. Inputs are normalised inside the network,
 * xhat_j = in_scale[j] * x_j + in_shift[j] (to [-1, 1] over the box), and every derivative is
 * taken with respect to the physical x_j.
 *
 * Channels: each point carries K = 1 + nd1 + nd2 channels through every layer: channel 0 the
 * value, channels 1..nd1 the first derivatives d/dx_j for j = 0..nd1-1, channels
 * nd1+1..nd1+nd2 the diagonal second derivatives d2/dx_j2 for j = 0..nd2-1 (nd1 <= nin,
 * nd2 <= nd1: the space axes come first, so a time-dependent case takes nd1 = nin, nd2 = the
 * space axes). A layer is one matrix product over the channels stacked as columns
 * (A = W Z, bias added to the value channel only), then the elementwise chain rule:
 *   y = s(a0),  y_j = s'(a0) a_j,  y_jj = s''(a0) a_j^2 + s'(a0) a_jj.
 * Laplacian mode (shape.lap = 1): the nd2 second-derivative channels are replaced by one,
 * channel nd1 + 1, holding their sum L = sum_{j<nd2} d2/dx_j2, so K = 1 + nd1 + (nd2 > 0)
 * (nd2 = 0: no second-derivative channel, as in the diagonal mode). Its chain rule:
 *   y_L = s''(a0) sum_{j<nd2} a_j^2 + s'(a0) a_L.
 * Every PDE of the PINN method reads only the Laplacian, so its engine takes this mode:
 * nd2 - 1 channels fewer than the diagonal mode (one in 2-D, two in 3-D) in every product and
 * every array. The diagonal mode (lap = 0) is there for models that need the separate second
 * derivatives. With nd2 <= 1 the two modes carry the same channels (the same network, up to
 * rounding).
 *
 * Parameters: one flat vector theta of tsr_net_nparam values. Layer l (0..depth; depth is the
 * output layer) has n_out(l) x n_in(l) weights W_l, column-major (W_l(i, j) at
 * woff(l) + i + j * n_out(l)), then n_out(l) biases at boff(l) = woff(l) + n_out(l) * n_in(l);
 * woff(0) = 0 and each layer follows the previous one. n_in(0) = nin, n_out(depth) = nout,
 * every other size is width.
 *
 * Point arrays (column-major, one column per point):
 *   X  [nin x npts]                 X[j + p * nin]: input j of point p (physical units)
 *   U  [nout x K * npts]            U[i + nout * (c * npts + p)]: component i, channel c, point p
 *   dU [same layout as U]           dL/dU, from the loss
 * Element type: float when opts.single, else double; memory space: the device's when
 * opts.device (pointers from cudaMalloc, work issued on opts.stream), else the host's. Host and
 * device give the same results up to rounding (BLAS and cuBLAS sum in their own orders);
 * repeated calls on one backend and one machine give the same bits. The host backend's bits do
 * not depend on OMP_NUM_THREADS either: tsr_net_create sets OpenBLAS to one thread (process
 * wide; OpenMP runs the elementwise loops) unless OPENBLAS_NUM_THREADS is set, and then they
 * repeat only for the same OPENBLAS_NUM_THREADS. Not to be called from inside an OpenMP
 * parallel region.
 *
 * The device backend has three paths (tsr_net_backend says which one a network took):
 *   "layers"  the default where it applies: each hidden layer l >= 1 one kernel forward (its
 *             product with the weights and the chain rule) and one in reverse (W_l^T dA_l and
 *             the chain rule's reverse of layer l - 1; for l = 1 straight into layer 0's
 *             parameter sums), fp32 FMA on a tile of points with all K channels in shared
 *             memory, 4 units x 4 points x K channels a thread, so that a layer's channels
 *             cross DRAM once; the weight gradients stay cuBLAS products, layer 0's forward
 *             and the output layer as on the cuBLAS path. Float, widths 4-128 whose quarter
 *             divides 256, values alone or the Laplacian mode's PINN channel sets
 *             (kernels/net_cuda_internal.h); its kernels also run on the CPU in CI
 *             (net_layer_emulated). TSR_NET_FUSED=2 asks for it (read at tsr_net_create).
 *   "cublas"  each layer one cuBLAS product over all K * npts columns, then fused elementwise
 *             kernels for the chain rule and deterministic reductions for the biases (the
 *             last hidden layer's reverse reads dU and the output weights directly); where
 *             the layers path does not apply (double, other widths and channel sets), or
 *             with TSR_NET_FUSED=0;
 *   "fused"   one kernel for the whole forward pass and one for the whole reverse pass: a
 *             thread block keeps a tile of points (all K channels) and the current layer's
 *             weights in shared memory and runs every layer in fp32 or fp64 FMA; the forward
 *             pass stores the hidden layers' pre-activations for the reverse pass; the
 *             parameter gradients are summed per block over its tiles and then over the blocks
 *             in a fixed order (no atomics). Opt-in: TSR_NET_FUSED=1 selects it where it
 *             applies:
 *               (nd1, nd2) one of (0,0), (1,1), (2,2), (3,3), (2,1), (3,2), (4,3) (values alone;
 *               steady 1-3 D; 1-3 D + t), in either mode, any nin and nout;
 *               width a multiple of 4 whose reverse-pass tile fits one block's shared memory
 *               (checked at create; on an H100, fp32 K = 5: width up to 124, fp64 K = 5: up
 *               to 96; fewer channels, wider);
 *               its workspace no larger than the cuBLAS path's (tsr_net_workspace_bytes).
 *             Elsewhere the cuBLAS path runs.
 *   bench/pinn_gpu.sh measures the three against each other and PyTorch (bench/README.md:
 *   Poisson 2D on an H100, layers 828 it/s, cuBLAS 615, fused 646).
 *   The paths sum in different orders: they agree to rounding, and each repeats its own
 *   bits; a fused reverse pass's bits also depend on the device's multiprocessor count (the
 *   number of blocks that share the points). */
#ifndef TSR_NET_H
#define TSR_NET_H

#include <stddef.h>
#include <stdint.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { TSR_NET_TANH = 0, TSR_NET_SIN } tsr_net_act;

typedef struct {
  int nin;          /* 1..4 */
  int nout;         /* 1..TSR_MAX_COMP */
  int width;        /* units per hidden layer, >= 1 */
  int depth;        /* hidden layers, >= 1 */
  tsr_net_act act;
  int nd1, nd2;     /* derivative channels (above); 0 <= nd2 <= nd1 <= nin */
  int lap;          /* 1: one Laplacian channel for the nd2 second derivatives; 0: nd2
                       diagonal channels (above). Last, so positional initialisers that end
                       at nd2 keep the diagonal mode. */
} tsr_net_shape;

/* K = 1 + nd1 + nd2 (diagonal mode), 1 + nd1 + (nd2 > 0) (Laplacian mode). */
int tsr_net_channels(const tsr_net_shape *s);

/* Number of parameters (weights and biases of every layer). */
size_t tsr_net_nparam(const tsr_net_shape *s);

/* Layer l's sizes and where its weights and biases start in theta (see above). Any of the
 * outputs may be NULL. */
void tsr_net_layer(const tsr_net_shape *s, int l, int *n_out, int *n_in, size_t *woff,
                   size_t *boff);

/* Fills theta (host, tsr_net_nparam doubles) with Glorot-normal weights (standard deviation
 * sqrt(2 / (n_in + n_out))) and zero biases, from seed alone: tessera's own generator
 * (splitmix64 + Box-Muller with its own log, cos and sin; the stream's order is in
 * kernels/net.c), so every machine and backend starts from the same bits. */
void tsr_net_init(const tsr_net_shape *s, uint64_t seed, double *theta);

typedef struct {
  tsr_net_shape shape;
  int single;              /* 1: float, 0: double (storage and arithmetic) */
  int device;              /* 1: CUDA (cuBLAS), 0: host (BLAS) */
  void *stream;            /* device: the cudaStream_t every call is issued on (NULL: default) */
  int npts;                /* capacity: most points of one forward pass */
  double in_scale[4], in_shift[4]; /* the input normalisation, per input */
} tsr_net_opts;

typedef struct tsr_net tsr_net;

/* A network's workspace: what a forward pass keeps for the backward pass (pre-activations and
 * outputs of every layer over all channels of npts points) and the BLAS handle. Owned by the
 * caller (tsr_net_destroy). Not collective. Errors: TSR_ERR_INPUT (a shape out of range, lap
 * neither 0 nor 1, npts below 1 or beyond 2^31 entries of one product, an in_scale[j < nin]
 * zero or not finite, an in_shift not finite; *out is NULL on every error),
 * TSR_ERR_MEMORY (host or device: the message says how many bytes), TSR_ERR_CUDA,
 * TSR_ERR_UNSUPPORTED (device on a build without CUDA). */
tsr_err tsr_net_create(const tsr_net_opts *o, tsr_net **out);

/* Bytes of workspace tsr_net_create allocates for these (valid) options (to refuse a network
 * too large for the memory before any allocation): per hidden layer A and Z
 * (width x K * npts each), two arrays of that size for the backward pass, the normalised
 * inputs (nin x npts), each rounded up to 64 bytes, and a small header. */
size_t tsr_net_workspace_bytes(const tsr_net_opts *o);

/* Which path runs the passes: "host", "cublas", "fused" or "layers" (above). A static string. */
const char *tsr_net_backend(const tsr_net *n);

/* Frees and sets *n to NULL; accepts NULL. */
void tsr_net_destroy(tsr_net **n);

/* Forward pass over 0 <= npts <= capacity points: U (above) from theta and X. Keeps what the
 * backward pass needs (a failed call leaves no forward pass to reverse). Device: asynchronous
 * on the stream; no host synchronisation, no allocation (it may be captured in a CUDA graph).
 * Errors: TSR_ERR_INPUT (npts negative or above the capacity), TSR_ERR_CUDA. */
tsr_err tsr_net_forward(tsr_net *n, const void *theta, const void *X, int npts, void *U);

/* Reverse pass of the last forward pass: grad[k] = sum over U's entries of dU * dU/dtheta_k
 * (overwritten, tsr_net_nparam values). theta must be the forward pass's. Same stream and
 * capture rules as the forward pass. Errors: TSR_ERR_STATE (no forward pass before),
 * TSR_ERR_CUDA. */
tsr_err tsr_net_backward(tsr_net *n, const void *theta, const void *dU, void *grad);

#ifdef __cplusplus
}
#endif

#endif
