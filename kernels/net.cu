// The PINN network's elementwise and reduction kernels (kernels/net_cuda_internal.h); the
// matrix products between them are cuBLAS calls in kernels/net_cuda.c.
//
// Elementwise kernels run a thread per (unit, point) that does all K channels, so that the
// activation and its derivatives at a0 are computed once per point; consecutive threads take
// consecutive units, so each channel's plane is read and written coalesced.
//
// Reductions over the points (bias gradients, layer 0's weight gradient) never use atomics:
// block (chunk b, unit tile) has threads (unit u, lane g); lane g walks the chunk's points
// g, g + G, ... in order, the G lanes of a unit are summed in a fixed tree, and the chunk's sum
// is a partial; tsr_net_cuda_finish sums a unit's partials in a fixed tree again. The chunks
// depend on npts and the rows alone, so a given call gives the same bits every time.
#include <math.h>

#include "kernels/cuda_util.h"
#include "kernels/net.h"
#include "kernels/net_act.h"
#include "kernels/net_cuda_internal.h"

namespace {

constexpr int kThreads = 256;
constexpr int kMaxChunks = 1024;  // partials per unit at most
constexpr int kPointsPerLane = 16; // points a lane sums before the chunks are capped

// s(a) and its first three derivatives (kernels/net_act.h, shared with the host backend); the
// third is needed by the reverse pass only.
__device__ __forceinline__ void act_t(int k, float a, float &s, float &s1, float &s2, float &s3) {
  s = tsr_net_act_value_f(k, a);
  tsr_net_act_derivs_f(k, a, s, &s1, &s2, &s3);
}
__device__ __forceinline__ void act_t(int k, double a, double &s, double &s1, double &s2,
                                      double &s3) {
  s = tsr_net_act_value_d(k, a);
  tsr_net_act_derivs_d(k, a, s, &s1, &s2, &s3);
}
template <int kAct, typename T>
__device__ __forceinline__ void act(T a, T &s, T &s1, T &s2, T &s3) {
  act_t(kAct, a, s, s1, s2, s3);
}

// The unit and lane shape of the reductions: U units a block (coalesced), G lanes each.
struct rshape {
  int U, G, tiles;
};

__host__ __device__ inline rshape reduce_shape(int rows) {
  rshape r;
  r.U = rows < kThreads ? rows : kThreads;
  r.G = 1;
  while (2 * r.G * r.U <= kThreads) r.G *= 2;
  r.tiles = (rows + r.U - 1) / r.U;
  return r;
}

inline int chunks_of(int rows, int npts) {
  rshape r = reduce_shape(rows);
  long per = (long)r.G * kPointsPerLane;
  long nb = ((long)npts + per - 1) / per;
  if (nb < 1) nb = 1;
  if (nb > kMaxChunks) nb = kMaxChunks;
  return (int)nb;
}

// j = 0 .. n - 1 for a run-time n of at most 4 (inputs and derivative channels), unrolled so
// that arrays indexed by j stay in registers (a loop to n kept them in local memory).
#define UNROLL4(j, n) _Pragma("unroll") for (int j = 0; j < 4; ++j) if (j < (n))

inline unsigned blocks_for(size_t n) { return (unsigned)((n + kThreads - 1) / kThreads); }

// Sums sh[u + U * g] over the G lanes of each unit into sh[u] (fixed tree; all threads call).
template <typename T>
__device__ __forceinline__ void lane_tree(T *sh, int u, int g, int U, int G) {
  for (int s = G / 2; s > 0; s /= 2) {
    __syncthreads();
    if (g < s) sh[u + U * g] += sh[u + U * (g + s)];
  }
  __syncthreads();
}

template <int kAct, typename T>
__global__ void layer0_fwd(tsr_net_kdims d, const T *__restrict__ theta, const T *__restrict__ X,
                           int npts, T *__restrict__ A0, T *__restrict__ Z0) {
  const size_t total = (size_t)d.width * npts;
  const size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= total) return;
  const int w = d.width;
  const int i = (int)(e % w);
  const size_t p = e / w;
  const size_t cs = total; // one channel's plane
  T a = T(0), aj[4] = {};
  UNROLL4(j, d.nin) {
    const T wij = theta[i + (size_t)j * w];
    const T xhat = T(d.in_scale[j]) * X[j + (size_t)d.nin * p] + T(d.in_shift[j]);
    a += wij * xhat;
    aj[j] = wij * T(d.in_scale[j]);
  }
  A0[e] = a;
  T s, s1, s2, s3;
  act<kAct>(a + theta[(size_t)w * d.nin + i], s, s1, s2, s3);
  Z0[e] = s;
  UNROLL4(j, d.nd1) Z0[e + (1 + j) * cs] = s1 * aj[j];
  if (d.lap) {
    T q = T(0);
    UNROLL4(j, d.nd2) q += aj[j] * aj[j];
    Z0[e + (1 + d.nd1) * cs] = s2 * q;
  } else {
    UNROLL4(j, d.nd2) Z0[e + (1 + d.nd1 + j) * cs] = s2 * aj[j] * aj[j];
  }
}

template <int kAct, typename T>
__global__ void act_fwd(tsr_net_kdims d, const T *__restrict__ b, const T *__restrict__ A,
                        int npts, T *__restrict__ Z) {
  const size_t cs = (size_t)d.width * npts;
  const size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= cs) return;
  T s, s1, s2, s3, aj[4] = {};
  act<kAct>(A[e] + b[e % d.width], s, s1, s2, s3);
  Z[e] = s;
  UNROLL4(j, d.nd1) {
    aj[j] = A[e + (1 + j) * cs];
    Z[e + (1 + j) * cs] = s1 * aj[j];
  }
  if (d.lap) {
    T q = T(0);
    UNROLL4(j, d.nd2) q += aj[j] * aj[j];
    const size_t o = e + (1 + d.nd1) * cs;
    Z[o] = s2 * q + s1 * A[o];
  } else {
    UNROLL4(j, d.nd2) {
      const size_t o = e + (1 + d.nd1 + j) * cs;
      Z[o] = s2 * aj[j] * aj[j] + s1 * A[o];
    }
  }
}

template <typename T>
__global__ void bias_out(int nout, const T *__restrict__ b, int npts, T *__restrict__ U) {
  const size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (e < (size_t)nout * npts) U[e] += b[e % nout];
}

// The chunk of points of block blockIdx.x: [*p0, *p1).
__device__ __forceinline__ void chunk(int npts, int *p0, int *p1) {
  const int per = (int)(((long)npts + gridDim.x - 1) / gridDim.x);
  const long lo = (long)blockIdx.x * per;
  *p0 = lo < npts ? (int)lo : npts;
  *p1 = lo + per < npts ? (int)(lo + per) : npts;
}

// The output layer's reverse on the fly: dL/dZ of the last hidden layer at (unit i, channel
// plane c, point p) = sum over the outputs o of W_out(o, i) dU(o, c, p), so that it never
// crosses DRAM (out.dU null: G holds it). With one output (wsum), the output layer's weight
// gradient too, dW_out(0, i) = sum over c, p of dU(c, p) Z(i, c, p) with Z formed from A as
// act_fwd does, as a second sum a unit: no product reads a stored Z.
template <typename T>
struct out_rev {
  const T *W, *dU; // W_out (nout x width, column-major), dU (nout x K npts)
  int nout, wsum;
};
template <typename T>
__device__ __forceinline__ T grad_in(const out_rev<T> &out, const T *__restrict__ G, size_t e,
                                     int i, int c, int p, int npts, size_t cs) {
  if (!out.dU) return G[e + c * cs];
  const T *du = out.dU + (size_t)out.nout * ((size_t)c * npts + p);
  T v = T(0);
  for (int o = 0; o < out.nout; ++o) v += out.W[o + (size_t)out.nout * i] * du[o];
  return v;
}
// dU(0, c, p) where wsum (one output), else 0 (no sum).
template <typename T>
__device__ __forceinline__ T du0(const out_rev<T> &out, int c, int p, int npts) {
  return out.wsum ? out.dU[(size_t)c * npts + p] : T(0);
}

// A memory-bound loop whose loads wait on DRAM: at most 64 registers a thread (four blocks an
// SM; it took 108 and two) so that more warps hide the latency.
#ifndef TSR_NET_ACT_MINB
#define TSR_NET_ACT_MINB 4
#endif
template <int kAct, typename T>
__global__ void __launch_bounds__(kThreads, TSR_NET_ACT_MINB)
    act_bwd(tsr_net_kdims d, rshape r, out_rev<T> out, const T *__restrict__ b,
                        const T *__restrict__ A, int npts, T *__restrict__ G,
                        T *__restrict__ partial) {
  __shared__ T sh[2 * kThreads];
  const int u = threadIdx.x % r.U, g = threadIdx.x / r.U;
  const int i = blockIdx.y * r.U + u, w = d.width;
  const size_t cs = (size_t)w * npts;
  int p0, p1;
  chunk(npts, &p0, &p1);
  T acc = T(0), accw = T(0);
  if (i < w) {
    const T bi = b[i];
    for (int p = p0 + g; p < p1; p += r.G) {
      const size_t e = i + (size_t)w * p;
      T s, s1, s2, s3, aj[4] = {}, dyj[4] = {};
      act<kAct>(A[e] + bi, s, s1, s2, s3);
      T da0 = grad_in(out, G, e, i, 0, p, npts, cs) * s1;
      T zw = du0(out, 0, p, npts) * s; // dU . Z over the channels (wsum)
      UNROLL4(j, d.nd1) {
        aj[j] = A[e + (1 + j) * cs];
        dyj[j] = grad_in(out, G, e, i, 1 + j, p, npts, cs);
        da0 += dyj[j] * s2 * aj[j];
        zw += du0(out, 1 + j, p, npts) * (s1 * aj[j]);
      }
      if (d.lap) {
        // the Laplacian channel: y_L = s'' sum_j a_j^2 + s' a_L in reverse
        const size_t o = e + (1 + d.nd1) * cs;
        const T gL = grad_in(out, G, e, i, 1 + d.nd1, p, npts, cs);
        T q = T(0);
        UNROLL4(j, d.nd2) {
          q += aj[j] * aj[j];
          dyj[j] = dyj[j] * s1 + gL * T(2) * s2 * aj[j];
        }
        da0 += gL * (s3 * q + s2 * A[o]);
        zw += du0(out, 1 + d.nd1, p, npts) * (s2 * q + s1 * A[o]);
        G[o] = gL * s1;
      } else {
        UNROLL4(j, d.nd2) {
          const size_t o = e + (1 + d.nd1 + j) * cs;
          const T dyjj = grad_in(out, G, e, i, 1 + d.nd1 + j, p, npts, cs);
          da0 += dyjj * (s3 * aj[j] * aj[j] + s2 * A[o]);
          zw += du0(out, 1 + d.nd1 + j, p, npts) * (s2 * aj[j] * aj[j] + s1 * A[o]);
          G[o] = dyjj * s1;
          dyj[j] = dyj[j] * s1 + dyjj * T(2) * s2 * aj[j];
        }
      }
      UNROLL4(j, d.nd1) if (j >= d.nd2) dyj[j] = dyj[j] * s1;
      UNROLL4(j, d.nd1) G[e + (1 + j) * cs] = dyj[j];
      G[e] = da0;
      acc += da0;
      accw += zw;
    }
  }
  sh[threadIdx.x] = acc;
  sh[kThreads + threadIdx.x] = accw;
  lane_tree(sh, u, g, r.U, r.G);
  if (out.wsum) lane_tree(sh + kThreads, u, g, r.U, r.G);
  if (g == 0 && i < w) {
    partial[(size_t)i * gridDim.x + blockIdx.x] = sh[u];
    if (out.wsum) partial[((size_t)w + i) * gridDim.x + blockIdx.x] = sh[kThreads + u];
  }
}

template <int kAct, typename T>
__global__ void layer0_bwd(tsr_net_kdims d, rshape r, const T *__restrict__ theta,
                           const T *__restrict__ X, const T *__restrict__ A0,
                           const T *__restrict__ G, int npts, T *__restrict__ partial) {
  __shared__ T sh[TSR_NET_MAX_SUMS * kThreads];
  const int u = threadIdx.x % r.U, g = threadIdx.x / r.U;
  const int i = blockIdx.y * r.U + u, w = d.width, nsum = 1 + d.nin;
  const size_t cs = (size_t)w * npts;
  int p0, p1;
  chunk(npts, &p0, &p1);
  T acc[TSR_NET_MAX_SUMS];
  for (int k = 0; k < TSR_NET_MAX_SUMS; ++k) acc[k] = T(0);
  if (i < w) {
    const T bi = theta[(size_t)w * d.nin + i];
    T aj[4] = {}, sc[4] = {}, sh_[4] = {};
    UNROLL4(j, d.nin) {
      sc[j] = T(d.in_scale[j]);
      sh_[j] = T(d.in_shift[j]);
      aj[j] = theta[i + (size_t)j * w] * sc[j];
    }
    for (int p = p0 + g; p < p1; p += r.G) {
      const size_t e = i + (size_t)w * p;
      T s, s1, s2, s3;
      act<kAct>(A0[e] + bi, s, s1, s2, s3);
      // A0's second-derivative (Laplacian) channels are 0: their gradient reaches no
      // parameter
      T da0 = G[e] * s1, daj[4] = {};
      UNROLL4(j, d.nd1) {
        const T dyj = G[e + (1 + j) * cs];
        da0 += dyj * s2 * aj[j];
        daj[j] = dyj * s1;
      }
      if (d.lap) {
        const T gL = G[e + (1 + d.nd1) * cs];
        T q = T(0);
        UNROLL4(j, d.nd2) {
          q += aj[j] * aj[j];
          daj[j] += gL * T(2) * s2 * aj[j];
        }
        da0 += gL * (s3 * q);
      } else {
        UNROLL4(j, d.nd2) {
          const T dyjj = G[e + (1 + d.nd1 + j) * cs];
          da0 += dyjj * (s3 * aj[j] * aj[j]);
          daj[j] += dyjj * T(2) * s2 * aj[j];
        }
      }
      acc[0] += da0;
      UNROLL4(j, d.nin) {
        const T xhat = sc[j] * X[j + (size_t)d.nin * p] + sh_[j];
        acc[1 + j] += j < d.nd1 ? da0 * xhat + sc[j] * daj[j] : da0 * xhat;
      }
    }
  }
#pragma unroll
  for (int k = 0; k < TSR_NET_MAX_SUMS; ++k)
    if (k < nsum) sh[k * kThreads + threadIdx.x] = acc[k];
  for (int k = 0; k < nsum; ++k) lane_tree(sh + k * kThreads, u, g, r.U, r.G);
  if (g == 0 && i < w)
    for (int k = 0; k < nsum; ++k)
      partial[((size_t)k * w + i) * gridDim.x + blockIdx.x] = sh[k * kThreads + u];
}

template <typename T>
__global__ void rowsum(rshape r, int rows, const T *__restrict__ M, int npts,
                       T *__restrict__ partial) {
  __shared__ T sh[kThreads];
  const int u = threadIdx.x % r.U, g = threadIdx.x / r.U;
  const int i = blockIdx.y * r.U + u;
  int p0, p1;
  chunk(npts, &p0, &p1);
  T acc = T(0);
  if (i < rows)
    for (int p = p0 + g; p < p1; p += r.G) acc += M[i + (size_t)rows * p];
  sh[threadIdx.x] = acc;
  lane_tree(sh, u, g, r.U, r.G);
  if (g == 0 && i < rows) partial[(size_t)i * gridDim.x + blockIdx.x] = sh[u];
}

struct bases {
  size_t v[TSR_NET_MAX_SUMS];
};

// Block k sums the nb partials of row k (= sum s, unit i) in a fixed order.
template <typename T>
__global__ void finish(int rows, int nb, const T *__restrict__ partial, bases base,
                       T *__restrict__ out) {
  __shared__ T sh[kThreads];
  const int k = blockIdx.x;
  T acc = T(0);
  for (int c = threadIdx.x; c < nb; c += kThreads) acc += partial[(size_t)k * nb + c];
  sh[threadIdx.x] = acc;
  for (int s = kThreads / 2; s > 0; s /= 2) {
    __syncthreads();
    if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
  }
  if (threadIdx.x == 0) out[base.v[k / rows] + k % rows] = sh[0];
}

template <typename T>
tsr_err layer0_fwd_t(const tsr_net_kdims *d, const void *theta, const void *X, int npts,
                     void *A0, void *Z0, cudaStream_t st) {
  const unsigned nb = blocks_for((size_t)d->width * npts);
  if (d->act == TSR_NET_TANH)
    layer0_fwd<TSR_NET_TANH, T><<<nb, kThreads, 0, st>>>(
        *d, (const T *)theta, (const T *)X, npts, (T *)A0, (T *)Z0);
  else
    layer0_fwd<TSR_NET_SIN, T><<<nb, kThreads, 0, st>>>(
        *d, (const T *)theta, (const T *)X, npts, (T *)A0, (T *)Z0);
  TSR_CUDA_LAUNCHED("net layer 0 forward");
  return TSR_OK;
}

template <typename T>
tsr_err act_fwd_t(const tsr_net_kdims *d, const void *b, const void *A, int npts, void *Z,
                  cudaStream_t st) {
  const unsigned nb = blocks_for((size_t)d->width * npts);
  if (d->act == TSR_NET_TANH)
    act_fwd<TSR_NET_TANH, T><<<nb, kThreads, 0, st>>>(*d, (const T *)b, (const T *)A, npts,
                                                        (T *)Z);
  else
    act_fwd<TSR_NET_SIN, T><<<nb, kThreads, 0, st>>>(*d, (const T *)b, (const T *)A, npts,
                                                       (T *)Z);
  TSR_CUDA_LAUNCHED("net activation forward");
  return TSR_OK;
}

template <typename T>
tsr_err act_bwd_t(const tsr_net_kdims *d, int nout, const void *Wout, const void *dU, int wsum,
                  const void *b, const void *A, int npts, void *G, void *partial,
                  cudaStream_t st) {
  const rshape r = reduce_shape(d->width);
  const dim3 grid((unsigned)chunks_of(d->width, npts), (unsigned)r.tiles);
  const out_rev<T> out = {(const T *)Wout, (const T *)dU, nout, dU && nout == 1 && wsum};
  if (d->act == TSR_NET_TANH)
    act_bwd<TSR_NET_TANH, T><<<grid, r.U * r.G, 0, st>>>(*d, r, out, (const T *)b, (const T *)A,
                                                         npts, (T *)G, (T *)partial);
  else
    act_bwd<TSR_NET_SIN, T><<<grid, r.U * r.G, 0, st>>>(*d, r, out, (const T *)b, (const T *)A,
                                                        npts, (T *)G, (T *)partial);
  TSR_CUDA_LAUNCHED("net activation backward");
  return TSR_OK;
}

template <typename T>
tsr_err layer0_bwd_t(const tsr_net_kdims *d, const void *theta, const void *X, const void *A0,
                     const void *G, int npts, void *partial, cudaStream_t st) {
  const rshape r = reduce_shape(d->width);
  const dim3 grid((unsigned)chunks_of(d->width, npts), (unsigned)r.tiles);
  if (d->act == TSR_NET_TANH)
    layer0_bwd<TSR_NET_TANH, T><<<grid, r.U * r.G, 0, st>>>(
        *d, r, (const T *)theta, (const T *)X, (const T *)A0, (const T *)G, npts, (T *)partial);
  else
    layer0_bwd<TSR_NET_SIN, T><<<grid, r.U * r.G, 0, st>>>(
        *d, r, (const T *)theta, (const T *)X, (const T *)A0, (const T *)G, npts, (T *)partial);
  TSR_CUDA_LAUNCHED("net layer 0 backward");
  return TSR_OK;
}

}  // namespace

extern "C" int tsr_net_cuda_chunks(int rows, int npts) { return chunks_of(rows, npts); }

extern "C" tsr_err tsr_net_cuda_layer0_fwd(const tsr_net_kdims *d, const void *theta,
                                           const void *X, int npts, void *A0, void *Z0,
                                           cudaStream_t stream) {
  if (npts <= 0) return TSR_OK;
  return d->single ? layer0_fwd_t<float>(d, theta, X, npts, A0, Z0, stream)
                   : layer0_fwd_t<double>(d, theta, X, npts, A0, Z0, stream);
}

extern "C" tsr_err tsr_net_cuda_act_fwd(const tsr_net_kdims *d, const void *b, const void *A,
                                        int npts, void *Z, cudaStream_t stream) {
  if (npts <= 0) return TSR_OK;
  return d->single ? act_fwd_t<float>(d, b, A, npts, Z, stream)
                   : act_fwd_t<double>(d, b, A, npts, Z, stream);
}

extern "C" tsr_err tsr_net_cuda_bias_out(const tsr_net_kdims *d, int nout, const void *b,
                                         int npts, void *U, cudaStream_t stream) {
  if (npts <= 0) return TSR_OK;
  const unsigned nb = blocks_for((size_t)nout * npts);
  if (d->single)
    bias_out<float><<<nb, kThreads, 0, stream>>>(nout, (const float *)b, npts, (float *)U);
  else
    bias_out<double><<<nb, kThreads, 0, stream>>>(nout, (const double *)b, npts, (double *)U);
  TSR_CUDA_LAUNCHED("net output bias");
  return TSR_OK;
}

extern "C" tsr_err tsr_net_cuda_act_bwd(const tsr_net_kdims *d, const void *b, const void *A,
                                        int npts, void *G, void *partial, cudaStream_t stream) {
  if (npts <= 0) return TSR_OK;
  return d->single ? act_bwd_t<float>(d, 0, NULL, NULL, 0, b, A, npts, G, partial, stream)
                   : act_bwd_t<double>(d, 0, NULL, NULL, 0, b, A, npts, G, partial, stream);
}

extern "C" tsr_err tsr_net_cuda_out_bwd(const tsr_net_kdims *d, int nout, const void *Wout,
                                        const void *dU, int wsum, const void *b, const void *A,
                                        int npts, void *G, void *partial, cudaStream_t stream) {
  if (npts <= 0) return TSR_OK;
  return d->single ? act_bwd_t<float>(d, nout, Wout, dU, wsum, b, A, npts, G, partial, stream)
                   : act_bwd_t<double>(d, nout, Wout, dU, wsum, b, A, npts, G, partial, stream);
}

extern "C" tsr_err tsr_net_cuda_layer0_bwd(const tsr_net_kdims *d, const void *theta,
                                           const void *X, const void *A0, const void *G,
                                           int npts, void *partial, cudaStream_t stream) {
  if (npts <= 0) return TSR_OK;
  return d->single ? layer0_bwd_t<float>(d, theta, X, A0, G, npts, partial, stream)
                   : layer0_bwd_t<double>(d, theta, X, A0, G, npts, partial, stream);
}

extern "C" tsr_err tsr_net_cuda_rowsum(const tsr_net_kdims *d, int rows, const void *M, int npts,
                                       void *partial, cudaStream_t stream) {
  if (npts <= 0) return TSR_OK;
  const rshape r = reduce_shape(rows);
  const dim3 grid((unsigned)chunks_of(rows, npts), (unsigned)r.tiles);
  if (d->single)
    rowsum<float><<<grid, r.U * r.G, 0, stream>>>(r, rows, (const float *)M, npts,
                                                  (float *)partial);
  else
    rowsum<double><<<grid, r.U * r.G, 0, stream>>>(r, rows, (const double *)M, npts,
                                                   (double *)partial);
  TSR_CUDA_LAUNCHED("net row sums");
  return TSR_OK;
}

extern "C" tsr_err tsr_net_cuda_finish_nb(const tsr_net_kdims *d, int rows, int nsums, int nb,
                                          const void *partial, const size_t *base, void *out,
                                          cudaStream_t stream) {
  if (nb <= 0) return TSR_OK;
  TSR_CHECK(nsums >= 1 && nsums <= TSR_NET_MAX_SUMS, TSR_ERR_INTERNAL,
            "tsr_net_cuda_finish: %d sums (1..%d)", nsums, TSR_NET_MAX_SUMS);
  bases b = {};
  for (int s = 0; s < nsums; ++s) b.v[s] = base[s];
  const unsigned blocks = (unsigned)(rows * nsums);
  if (d->single)
    finish<float><<<blocks, kThreads, 0, stream>>>(rows, nb, (const float *)partial, b,
                                                   (float *)out);
  else
    finish<double><<<blocks, kThreads, 0, stream>>>(rows, nb, (const double *)partial, b,
                                                    (double *)out);
  TSR_CUDA_LAUNCHED("net partial sums");
  return TSR_OK;
}

extern "C" tsr_err tsr_net_cuda_finish(const tsr_net_kdims *d, int rows, int nsums, int npts,
                                       const void *partial, const size_t *base, void *out,
                                       cudaStream_t stream) {
  if (npts <= 0) return TSR_OK;
  return tsr_net_cuda_finish_nb(d, rows, nsums, chunks_of(rows, npts), partial, base, out,
                                stream);
}
