/* The CUDA backend of kernels/net.h, three paths behind the same calls, chosen at create:
 *   cuBLAS  the matrix products through cuBLAS, the elementwise chain rule and the reductions in
 *           kernels/net.cu;
 *   fused   one kernel per pass (kernels/net_fused.cu), taken where TSR_NET_FUSED=1 asks for it
 *           and it applies (its limits are in kernels/net.h);
 *   layers  the cuBLAS path's arrays and weight gradients, each hidden layer's product and chain
 *           rule in one kernel (kernels/net_layer.cu), the output layer in the last one's, where
 *           TSR_NET_FUSED=2 asks for it (the default) and it applies; bench/pinn_gpu.sh
 *           measures all three, bench/net_kernels their kernels.
 * Everything a pass needs is allocated by create, so forward and backward only issue work on
 * the network's stream (capturable in a graph).
 *
 * The fused path's device memory (one allocation): the hidden layers' pre-activations
 * (depth - 1) * width * K * (npts rounded up to the tile) * E, the copy of X, and the reverse
 * pass's per-block gradient sums (blocks * nparam * E); it is taken only where that is no more
 * than the cuBLAS path's (tsr_net_workspace_bytes stays an upper bound). The cuBLAS path's:
 *
 * Device memory (one allocation, each part 256-byte aligned), per E = element size:
 *   A_l, Z_l  for each hidden layer l:  2 * depth * width * K * npts * E  (tsr_net_workspace_bytes'
 *             count; layer 0 stores only its value channel in A_0: its derivative channels are
 *             constant per unit and are recomputed from W_0)
 *   G0, G1    the reverse pass's ping-pong gradients dZ / dA:  2 * width * K * npts * E
 *   Xc        a copy of the forward pass's X (layer 0's weight gradient needs it; the caller may
 *             reuse X between the passes):  nin * npts * E
 *   partials  of the deterministic reductions: (1 + nin) * max(width, nout) * (at most 1024) * E,
 *             or width^2 * tsr_net_layer_wgrad_blocks where layer_wgrad takes the weight gradients
 * plus cuBLAS's workspace (TSR_NET_CUBLAS_WS bytes, given with cublasSetWorkspace so that no
 * cuBLAS call allocates during capture) and the cuBLAS handle's own small state. */
#include <cublas_v2.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/cuda_util.h"
#include "kernels/net_cuda_internal.h"
#include "kernels/net_impl.h"

/* cuBLAS's recommended workspace for Hopper (32 MiB; 4 MiB suffices on older GPUs). */
#define TSR_NET_CUBLAS_WS ((size_t)32 << 20)

static tsr_err cublas_fail(cublasStatus_t st, const char *call, const char *file, int line) {
  int dev = -1;
  cudaGetDevice(&dev);
  return tsr_err_set(TSR_ERR_CUDA, file, line, "cuBLAS error in %s: %s (%s) (device %d, %s:%d)",
                     call, cublasGetStatusName(st), cublasGetStatusString(st), dev, file, line);
}

#define TSR_CUBLAS(call)                                                                       \
  do {                                                                                         \
    cublasStatus_t tsr_cb_s_ = (call);                                                         \
    if (tsr_cb_s_ != CUBLAS_STATUS_SUCCESS)                                                    \
      return cublas_fail(tsr_cb_s_, #call, __FILE__, __LINE__);                                \
  } while (0)

typedef struct {
  tsr_net_kdims d;
  cudaStream_t stream;
  cublasHandle_t blas;
  void *cublas_ws;
  void *mem;        /* the one allocation below */
  size_t bytes;     /* its size */
  void **A, **Z;    /* per hidden layer */
  void *G[2], *Xc, *partial;
  int fused;               /* the fused path (then A[0] holds the hidden layers' A) */
  int layers;              /* the cuBLAS path with the layers path's kernels
                              (net_cuda_internal.h) */
  int wgk;                 /* layers: the weight gradients by tsr_net_layer_wgrad (no Z stored
                              past Z_0), else by cuBLAS (TSR_NET_WGRAD=1 asks for the kernel:
                              bench/net_kernels measures both) */
  tsr_net_fused_plan plan;
} dev_ws;

static size_t align256(size_t b) { return (b + 255) & ~(size_t)255; }

static char *at(const void *p, size_t elems, size_t esize) {
  return (char *)p + elems * esize;
}

static void offsets(const tsr_net_shape *s, int l, size_t *woff, size_t *boff) {
  int n_out, n_in;
  tsr_net_layer(s, l, &n_out, &n_in, woff, boff);
}

/* C = op(A) op(B) with alpha 1 and beta 0 (C overwritten), all column-major. */
static tsr_err gemm(dev_ws *w, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                    const void *A, int lda, const void *B, int ldb, void *C, int ldc) {
  if (w->d.single) {
    const float one = 1.0f, zero = 0.0f;
    TSR_CUBLAS(cublasSgemm(w->blas, ta, tb, m, n, k, &one, (const float *)A, lda,
                           (const float *)B, ldb, &zero, (float *)C, ldc));
  } else {
    const double one = 1.0, zero = 0.0;
    TSR_CUBLAS(cublasDgemm(w->blas, ta, tb, m, n, k, &one, (const double *)A, lda,
                           (const double *)B, ldb, &zero, (double *)C, ldc));
  }
  return TSR_OK;
}

void tsr_net_cuda_destroy(struct tsr_net *n) {
  dev_ws *w = n ? (dev_ws *)n->dev : NULL;
  if (!w) return;
  /* work still queued on the stream reads these: let it finish first */
  if (w->mem) cudaStreamSynchronize(w->stream);
  if (w->blas) cublasDestroy(w->blas);
  cudaFree(w->cublas_ws);
  cudaFree(w->mem);
  free(w->A);
  free(w->Z);
  free(w);
  n->dev = NULL;
}

static size_t cublas_bytes(const tsr_net_opts *o, int K) {
  const tsr_net_shape *s = &o->shape;
  const size_t es = o->single ? sizeof(float) : sizeof(double);
  const size_t cap = (size_t)o->npts, width = (size_t)s->width;
  size_t psums = (size_t)(1 + s->nin) * width * (size_t)tsr_net_cuda_chunks(s->width, o->npts);
  const size_t pout = (size_t)s->nout * (size_t)tsr_net_cuda_chunks(s->nout, o->npts);
  if (pout > psums) psums = pout;
  return (2 * (size_t)s->depth + 2) * align256(width * (size_t)K * cap * es) +
         align256((size_t)s->nin * cap * es) + align256(psums * es) + TSR_NET_CUBLAS_WS;
}

static size_t fused_bytes(const tsr_net_opts *o, const tsr_net_fused_plan *pl) {
  const size_t es = o->single ? sizeof(float) : sizeof(double);
  return align256((size_t)(o->shape.depth - 1) * pl->lstride * es + 1) +
         align256((size_t)o->shape.nin * (size_t)o->npts * es) +
         align256((size_t)pl->blocks * pl->nparam * es);
}

/* Without TSR_NET_FUSED: the path bench/pinn_gpu.sh measured fastest on the GPU machine
 * (0 cuBLAS, 1 fused, 2 layers: kernels/net.h). */
#define TSR_NET_FUSED_DEFAULT 2

/* TSR_NET_FUSED (0, 1 or 2), else the default. */
static int want_path(void) {
  const char *env = getenv("TSR_NET_FUSED");
  if (env && env[0] >= '0' && env[0] <= '2' && env[1] == 0) return env[0] - '0';
  return TSR_NET_FUSED_DEFAULT;
}

static tsr_err choose_fused(struct tsr_net *n, dev_ws *w) {
  w->fused = w->layers = w->wgk = 0;
  const int want = want_path();
  if (want == 2) {
    char why[160];
    TSR_CALL(tsr_net_layer_plan(&w->d, &w->layers, why, sizeof why));
    /* its partials go to the cuBLAS path's buffer, sized for chunks a sum (they fit:
     * net_cuda_internal.h) */
    const int chunks = tsr_net_cuda_chunks(n->o.shape.width, n->o.npts);
    if (tsr_net_layer_blocks(n->o.shape.width, n->o.npts) > chunks) w->layers = 0;
    const char *wg = getenv("TSR_NET_WGRAD");
    w->wgk = w->layers && wg && wg[0] == '1' && wg[1] == 0;
    return TSR_OK;
  }
  if (want != 1) return TSR_OK;
  TSR_CALL(tsr_net_fused_make_plan(&w->d, n->o.shape.nout, n->o.shape.depth, n->o.npts,
                                   n->nparam, &w->plan));
  w->fused = w->plan.ok && fused_bytes(&n->o, &w->plan) <= cublas_bytes(&n->o, n->K);
  return TSR_OK;
}

static tsr_err create_fused(struct tsr_net *n, dev_ws *w) {
  const tsr_net_opts *o = &n->o;
  const size_t es = o->single ? sizeof(float) : sizeof(double);
  const size_t abytes = align256((size_t)(o->shape.depth - 1) * w->plan.lstride * es + 1);
  const size_t xbytes = align256((size_t)o->shape.nin * (size_t)o->npts * es);
  w->bytes = fused_bytes(o, &w->plan);
  w->A = calloc(1, sizeof *w->A);
  TSR_CHECK(w->A, TSR_ERR_MEMORY, "out of memory allocating the network's layer table");
  cudaError_t e = cudaMalloc(&w->mem, w->bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();
    w->mem = NULL;
    return tsr_err_set(e == cudaErrorMemoryAllocation ? TSR_ERR_MEMORY : TSR_ERR_CUDA, __FILE__,
                       __LINE__,
                       "cannot allocate %zu bytes of device memory for the network's workspace "
                       "(%d points, %d hidden layers of %d units, %d channels): %s; use fewer "
                       "points per pass or a smaller network",
                       w->bytes, o->npts, o->shape.depth, o->shape.width, n->K,
                       cudaGetErrorString(e));
  }
  w->A[0] = w->mem;
  w->Xc = (char *)w->mem + abytes;
  w->partial = (char *)w->Xc + xbytes;
  return TSR_OK;
}

const char *tsr_net_cuda_path(const struct tsr_net *n) {
  const dev_ws *w = (const dev_ws *)n->dev;
  return w && w->fused ? "fused" : w && w->layers ? "layers" : "cublas";
}

static tsr_err create_in(struct tsr_net *n, dev_ws *w) {
  const tsr_net_opts *o = &n->o;
  const tsr_net_shape *s = &o->shape;
  const size_t es = o->single ? sizeof(float) : sizeof(double);
  const size_t cap = (size_t)o->npts, K = (size_t)n->K, width = (size_t)s->width;
  TSR_CHECK(o->npts >= 1, TSR_ERR_INPUT, "network: capacity of %d points (needs at least 1)",
            o->npts);
  /* cuBLAS takes the columns of a layer's array as an int */
  TSR_CHECK(K * cap <= 2147483647u, TSR_ERR_INPUT,
            "network: %d points x %zu channels exceed the 2^31 - 1 columns of one matrix "
            "product: use fewer points per pass",
            o->npts, K);
  TSR_CHECK(s->nin >= 1 && s->nin + 1 <= TSR_NET_MAX_SUMS, TSR_ERR_INPUT,
            "network: %d inputs (1..4)", s->nin);

  w->d.single = o->single;
  w->d.act = (int)s->act;
  w->d.nin = s->nin;
  w->d.nd1 = s->nd1;
  w->d.nd2 = s->nd2;
  w->d.K = n->K;
  w->d.lap = s->lap && s->nd2 > 0;
  w->d.width = s->width;
  for (int j = 0; j < 4; ++j) {
    w->d.in_scale[j] = o->in_scale[j];
    w->d.in_shift[j] = o->in_shift[j];
  }
  w->stream = (cudaStream_t)o->stream;
  TSR_CALL(choose_fused(n, w));
  if (w->fused) return create_fused(n, w);

  const size_t layer = align256(width * K * cap * es);
  const size_t xbytes = align256((size_t)s->nin * cap * es);
  /* the largest reduction: layer 0's (1 + nin sums a unit), or the output bias's */
  size_t psums = (size_t)(1 + s->nin) * width * (size_t)tsr_net_cuda_chunks(s->width, o->npts);
  const size_t pout = (size_t)s->nout * (size_t)tsr_net_cuda_chunks(s->nout, o->npts);
  if (pout > psums) psums = pout;
  /* the layers path's weight gradients: an entry of dW a block */
  const size_t pw = w->wgk ? width * width * (size_t)tsr_net_layer_wgrad_blocks(s->width, o->npts) : 0;
  if (pw > psums) psums = pw;
  /* and the last hidden layer's reverse kernel: 3 sums a unit */
  const size_t pl = w->layers ? 3 * width * (size_t)tsr_net_layer_blocks(s->width, o->npts) : 0;
  if (pl > psums) psums = pl;
  const size_t pbytes = align256(psums * es);
  w->bytes = (2 * (size_t)s->depth + 2) * layer + xbytes + pbytes;

  w->A = calloc((size_t)s->depth, sizeof *w->A);
  w->Z = calloc((size_t)s->depth, sizeof *w->Z);
  TSR_CHECK(w->A && w->Z, TSR_ERR_MEMORY, "out of memory allocating the network's layer table");

  cudaError_t e = cudaMalloc(&w->mem, w->bytes);
  if (e != cudaSuccess) {
    cudaGetLastError(); /* an out-of-memory is not sticky; clear it for the next caller */
    w->mem = NULL;
    return tsr_err_set(e == cudaErrorMemoryAllocation ? TSR_ERR_MEMORY : TSR_ERR_CUDA, __FILE__,
                       __LINE__,
                       "cannot allocate %zu bytes of device memory for the network's workspace "
                       "(%d points, %d hidden layers of %d units, %zu channels): %s; use fewer "
                       "points per pass or a smaller network",
                       w->bytes, o->npts, s->depth, s->width, K, cudaGetErrorString(e));
  }
  char *p = (char *)w->mem;
  for (int l = 0; l < s->depth; ++l) {
    w->A[l] = p;
    p += layer;
    w->Z[l] = p;
    p += layer;
  }
  w->G[0] = p;
  p += layer;
  w->G[1] = p;
  p += layer;
  w->Xc = p;
  p += xbytes;
  w->partial = p;

  e = cudaMalloc(&w->cublas_ws, TSR_NET_CUBLAS_WS);
  if (e != cudaSuccess) {
    cudaGetLastError();
    w->cublas_ws = NULL;
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "cannot allocate the %zu bytes of cuBLAS workspace for the network (after "
                       "its %zu bytes of workspace): %s; use fewer points per pass or a smaller "
                       "network",
                       TSR_NET_CUBLAS_WS, w->bytes, cudaGetErrorString(e));
  }
  TSR_CUBLAS(cublasCreate(&w->blas));
  /* cublasSetStream resets the workspace to cuBLAS's own pool: set the stream first */
  TSR_CUBLAS(cublasSetStream(w->blas, w->stream));
  TSR_CUBLAS(cublasSetWorkspace(w->blas, w->cublas_ws, TSR_NET_CUBLAS_WS));
  /* full-precision products (no TF32), whatever the library's default becomes */
  TSR_CUBLAS(cublasSetMathMode(w->blas, CUBLAS_DEFAULT_MATH));
  TSR_CUBLAS(cublasSetPointerMode(w->blas, CUBLAS_POINTER_MODE_HOST));
  return TSR_OK;
}

tsr_err tsr_net_cuda_create(struct tsr_net *n) {
  TSR_CHECK(!n->dev, TSR_ERR_STATE, "tsr_net_cuda_create: the network already has a workspace");
  dev_ws *w = calloc(1, sizeof *w);
  TSR_CHECK(w, TSR_ERR_MEMORY, "out of memory allocating %zu bytes for the network", sizeof *w);
  n->dev = w;
  tsr_err err = create_in(n, w);
  if (err != TSR_OK) tsr_net_cuda_destroy(n);
  return err;
}

/* The layers path takes the output layer (one output) into the last hidden layer's kernels,
 * forward and reverse, where there is a hidden layer after layer 0. */
static int output_in_layers(const dev_ws *w, const tsr_net_shape *s) {
  return w->layers && s->depth >= 2 && s->nout == 1;
}

tsr_err tsr_net_cuda_forward(struct tsr_net *n, const void *theta, const void *X, int npts,
                             void *U) {
  dev_ws *w = (dev_ws *)n->dev;
  TSR_CHECK(w, TSR_ERR_STATE, "tsr_net_forward: the network has no device workspace");
  TSR_CHECK(npts >= 0 && npts <= n->o.npts, TSR_ERR_INPUT,
            "tsr_net_forward: %d points, the network was created for at most %d", npts,
            n->o.npts);
  const tsr_net_shape *s = &n->o.shape;
  const size_t es = n->o.single ? sizeof(float) : sizeof(double);
  const int cols = n->K * npts, width = s->width, L = s->depth;
  n->forwarded = 0;
  if (npts > 0 && w->fused) {
    TSR_CUDA(cudaMemcpyAsync(w->Xc, X, (size_t)s->nin * npts * es, cudaMemcpyDeviceToDevice,
                             w->stream));
    TSR_CALL(tsr_net_fused_forward(&w->plan, &w->d, theta, X, npts, U, w->A[0], w->stream));
  } else if (npts > 0) {
    TSR_CUDA(cudaMemcpyAsync(w->Xc, X, (size_t)s->nin * npts * es, cudaMemcpyDeviceToDevice,
                             w->stream));
    TSR_CALL(tsr_net_cuda_layer0_fwd(&w->d, theta, X, npts, w->A[0], w->Z[0], w->stream));
    size_t wo, bo;
    offsets(s, L, &wo, &bo);
    const int out1 = output_in_layers(w, s);
    for (int l = 1; l < L; ++l) {
      size_t wl, bl, wp, bp;
      offsets(s, l, &wl, &bl);
      offsets(s, l - 1, &wp, &bp);
      if (w->layers) {
        /* Z_l is stored where a product reads it: the cuBLAS weight gradient of layer l + 1, or
         * the output layer's product; with the weight-gradient kernel (wgk) Z_(l-1) is formed
         * from A_(l-1) as it is read instead */
        const int last = l == L - 1, fromA = w->wgk && l >= 2;
        TSR_CALL(tsr_net_layer_fwd(&w->d, at(theta, wl, es), at(theta, bl, es),
                                   fromA ? w->A[l - 1] : w->Z[l - 1], fromA ? at(theta, bp, es) : NULL,
                                   npts, w->A[l], (last ? !out1 : !w->wgk) ? w->Z[l] : NULL,
                                   last && out1 ? at(theta, wo, es) : NULL,
                                   last && out1 ? at(theta, bo, es) : NULL, last && out1 ? U : NULL,
                                   w->stream));
        continue;
      }
      TSR_CALL(gemm(w, CUBLAS_OP_N, CUBLAS_OP_N, width, cols, width, at(theta, wl, es), width,
                    w->Z[l - 1], width, w->A[l], width));
      TSR_CALL(tsr_net_cuda_act_fwd(&w->d, at(theta, bl, es), w->A[l], npts, w->Z[l], w->stream));
    }
    if (!out1) {
      TSR_CALL(gemm(w, CUBLAS_OP_N, CUBLAS_OP_N, s->nout, cols, width, at(theta, wo, es), s->nout,
                    w->Z[L - 1], width, U, s->nout));
      TSR_CALL(tsr_net_cuda_bias_out(&w->d, s->nout, at(theta, bo, es), npts, U, w->stream));
    }
  }
  n->npts = npts;
  n->forwarded = 1;
  return TSR_OK;
}

/* Layer 0's gradient (bias, then the nin weight columns) from its nb partials a sum. */
static tsr_err finish_layer0(struct tsr_net *n, dev_ws *w, void *grad, int nb) {
  const tsr_net_shape *s = &n->o.shape;
  size_t wo, bo, base[TSR_NET_MAX_SUMS];
  offsets(s, 0, &wo, &bo);
  base[0] = bo;
  for (int j = 0; j < s->nin; ++j) base[1 + j] = wo + (size_t)j * s->width;
  return tsr_net_cuda_finish_nb(&w->d, s->width, 1 + s->nin, nb, w->partial, base, grad,
                                w->stream);
}

/* Hidden layer l >= 2 in reverse on the layers path: G[1 - cur] = dL/dA_(l-1) from G[cur] =
 * dL/dA_l, and layer l - 1's bias gradient. With out (l the last hidden layer, one output),
 * G[cur] is formed from dU and written by the same kernel, with layer l's bias gradient and
 * the output layer's weight gradient. */
static tsr_err reverse_hidden(struct tsr_net *n, dev_ws *w, const void *theta, const void *dU,
                              int l, int cur, int out, void *grad) {
  const tsr_net_shape *s = &n->o.shape;
  const size_t es = n->o.single ? sizeof(float) : sizeof(double);
  const int width = s->width, npts = n->npts, nb = tsr_net_layer_blocks(width, npts);
  size_t wl, bl, wp, bp, wo, bo;
  offsets(s, l, &wl, &bl);
  offsets(s, l - 1, &wp, &bp);
  offsets(s, s->depth, &wo, &bo);
  TSR_CALL(tsr_net_layer_bwd(&w->d, at(theta, wl, es), at(theta, bp, es), out ? NULL : w->G[cur],
                             w->A[l - 1], npts, w->G[1 - cur], w->partial,
                             out ? at(theta, wo, es) : NULL, out ? dU : NULL,
                             out ? w->A[l] : NULL, out ? at(theta, bl, es) : NULL,
                             out ? w->G[cur] : NULL, w->stream));
  TSR_CALL(tsr_net_cuda_finish_nb(&w->d, width, 1, nb, w->partial, &bp, grad, w->stream));
  if (!out) return TSR_OK;
  const size_t base[2] = {bl, wo};
  return tsr_net_cuda_finish_nb(&w->d, width, 2, nb, at(w->partial, (size_t)width * nb, es), base,
                                grad, w->stream);
}

tsr_err tsr_net_cuda_backward(struct tsr_net *n, const void *theta, const void *dU, void *grad) {
  dev_ws *w = (dev_ws *)n->dev;
  TSR_CHECK(w, TSR_ERR_STATE, "tsr_net_backward: the network has no device workspace");
  TSR_CHECK(n->forwarded, TSR_ERR_STATE,
            "tsr_net_backward: no forward pass before (call tsr_net_forward first)");
  const tsr_net_shape *s = &n->o.shape;
  const size_t es = n->o.single ? sizeof(float) : sizeof(double);
  const int npts = n->npts, cols = n->K * npts, width = s->width, L = s->depth, nout = s->nout;
  if (npts == 0) {
    TSR_CUDA(cudaMemsetAsync(grad, 0, n->nparam * es, w->stream));
    return TSR_OK;
  }
  if (w->fused)
    return tsr_net_fused_backward(&w->plan, &w->d, theta, w->Xc, w->A[0], dU, npts, w->partial,
                                  grad, w->stream);
  size_t wo, bo;
  offsets(s, L, &wo, &bo);
  /* the output layer is linear: dA = dU; where the forward pass took it into the last hidden
   * layer's kernel (no Z_(L-1) stored), its weight gradient comes with that layer's reverse
   * (tsr_net_cuda_out_bwd, or the reverse kernel itself: outk) */
  const int wsum = output_in_layers(w, s);
  if (!wsum)
    TSR_CALL(gemm(w, CUBLAS_OP_N, CUBLAS_OP_T, nout, width, cols, dU, nout, w->Z[L - 1], width,
                  at(grad, wo, es), nout));
  TSR_CALL(tsr_net_cuda_rowsum(&w->d, nout, dU, npts, w->partial, w->stream));
  TSR_CALL(tsr_net_cuda_finish(&w->d, nout, 1, npts, w->partial, &bo, grad, w->stream));
  /* G[cur] holds dL/dZ_l, or dL/dA_l where a reverse kernel took the chain rule already (dA):
   * the last hidden layer's from dU directly (W_out^T dU never stored), where there is one
   * after layer 0 */
  const int outk = wsum && L >= 3; /* the output's reverse inside layer L - 1's reverse kernel */
  int cur = 0, dA = 1;
  if (L >= 2 && !outk) {
    size_t wh, bh;
    offsets(s, L - 1, &wh, &bh);
    TSR_CALL(tsr_net_cuda_out_bwd(&w->d, nout, at(theta, wo, es), dU, wsum, at(theta, bh, es),
                                  w->A[L - 1], npts, w->G[0], w->partial, w->stream));
    const size_t base[2] = {bh, wo};
    TSR_CALL(tsr_net_cuda_finish(&w->d, width, 1 + wsum, npts, w->partial, base, grad, w->stream));
  } else if (L < 2) {
    TSR_CALL(gemm(w, CUBLAS_OP_T, CUBLAS_OP_N, width, cols, nout, at(theta, wo, es), nout, dU,
                  nout, w->G[0], width));
    dA = 0;
  }
  for (int l = L - 1; l >= 1; --l) {
    offsets(s, l, &wo, &bo);
    if (!dA) {
      TSR_CALL(tsr_net_cuda_act_bwd(&w->d, at(theta, bo, es), w->A[l], npts, w->G[cur],
                                    w->partial, w->stream));
      TSR_CALL(tsr_net_cuda_finish(&w->d, width, 1, npts, w->partial, &bo, grad, w->stream));
    }
    size_t wp, bp;
    offsets(s, l - 1, &wp, &bp);
    /* with outk, layer L - 1's reverse kernel writes the G[cur] its weight gradient reads */
    const int first = outk && l == L - 1;
    if (first) TSR_CALL(reverse_hidden(n, w, theta, dU, l, cur, 1, grad));
    if (w->wgk) { /* Z_(l-1) from A_(l-1) as it is read (l >= 2) */
      TSR_CALL(tsr_net_layer_wgrad(&w->d, w->G[cur], l >= 2 ? w->A[l - 1] : w->Z[0],
                                   l >= 2 ? at(theta, bp, es) : NULL, npts, w->partial, w->stream));
      TSR_CALL(tsr_net_cuda_finish_nb(&w->d, width * width, 1, tsr_net_layer_wgrad_blocks(width, npts),
                                      w->partial, &wo, grad, w->stream));
    } else {
      TSR_CALL(gemm(w, CUBLAS_OP_N, CUBLAS_OP_T, width, width, cols, w->G[cur], width,
                    w->Z[l - 1], width, at(grad, wo, es), width));
    }
    if (w->layers && l >= 2) {
      if (!first) TSR_CALL(reverse_hidden(n, w, theta, NULL, l, cur, 0, grad));
      dA = 1;
    } else if (w->layers) { /* l = 1: into layer 0's parameters directly */
      TSR_CALL(tsr_net_layer_bwd1(&w->d, at(theta, wo, es), theta, w->Xc, w->G[cur], w->A[0],
                                  npts, w->partial, w->stream));
      TSR_CALL(finish_layer0(n, w, grad, tsr_net_layer_blocks(width, npts)));
      return TSR_OK;
    } else {
      TSR_CALL(gemm(w, CUBLAS_OP_T, CUBLAS_OP_N, width, cols, width, at(theta, wo, es), width,
                    w->G[cur], width, w->G[1 - cur], width));
      dA = 0;
    }
    cur = 1 - cur;
  }
  TSR_CALL(tsr_net_cuda_layer0_bwd(&w->d, theta, w->Xc, w->A[0], w->G[cur], npts, w->partial,
                                   w->stream));
  return finish_layer0(n, w, grad, tsr_net_cuda_chunks(width, npts));
}
