// The fully fused network's kernels (kernels/net_cuda_internal.h, tsr_net_fused_*), included
// by kernels/net_fused.cu (plans and launches) and by its parts kernels/net_fused_f{32,64}.cu,
// which instantiate the kernels of one element type each (so that nvcc compiles them in
// parallel); not a header to include elsewhere. One kernel runs every
// layer of the forward pass, one kernel the whole reverse pass, each thread block on a tile of
// P points with all K channels in shared memory (the spirit of tiny-cuda-nn's FullyFusedMLP,
// written for Taylor-mode channels and exact fp32/fp64 FMA arithmetic).
//
// Tiles. A block has NUG * NPG threads, NUG = width / 4 unit groups by NPG point groups; thread
// (ug, pg) owns the 4 units i = ug + NUG r (r = 0..3) of the TP points pg TP .. pg TP + TP - 1
// of the tile, every channel: 4 TP K accumulators in registers. The tile's activations sit in
// shared memory as rows of units, each row channel after channel, each channel P points
// (row stride S >= K P, padded so that the rows of 8 consecutive units fall in distinct banks).
// Weights are staged per layer in shared memory, permuted so that one vector load gives a
// thread's 4 units. Every product is a fixed-order loop of explicit fma (no contraction by the
// compiler: -fmad=false), so a call repeats its bits.
//
// Channels. The kernels are templated on <T, K, ND1, NL>: NL = 0 is the diagonal mode (ND2 =
// K - 1 - ND1 second-derivative channels after the ND1 first ones), NL > 0 the Laplacian mode
// (kernels/net.h: one channel, K - 1, summing the second derivatives in the first NL inputs;
// K = ND1 + 2). A Laplacian with NL = 1 is the diagonal mode's one channel, so those shapes
// take the diagonal kernels.
//
// Forward (tsr_net_fused_forward): layer 0 from the inputs (its derivative channels are
// W_0(:, j) in_scale[j], its second-derivative or Laplacian channels 0), then per hidden layer
// A = W Z in registers, A (without the bias) stored to global memory for the reverse pass,
// Z = s(A + b) by the chain rule of kernels/net.h written back over the tile; the output layer
// last.
// Layer 0's pre-activations are not stored: the reverse pass recomputes them from X (nin
// products a unit, the same operations, so the same bits).
//
// Reverse (tsr_net_fused_backward): a grid of at most `blocks` blocks (fixed at create from
// the device's occupancy), block b taking tiles b, b + grid, ... in order. Per tile: dU's tile;
// Z_(L-1) from the stored A; the output layer's gradients; then per hidden layer l, down: the
// chain rule in reverse in registers (dL/dZ_l to dL/dA_l, A_l read back), dA_l into shared
// memory beside Z_(l-1) (recomputed from A_(l-1)), the bias and weight gradients of the tile
// (dW_l = dA_l Z_(l-1)^T over the tile's K P columns), dL/dZ_(l-1) = W_l^T dA_l in registers;
// layer 0's gradients last. Each block sums its tiles' gradients into its own slice of
// `partial` (each entry owned by one thread: no atomics), and tsr_net_fused_finish sums the
// slices in block order. The bits depend on npts and the grid alone.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/cuda_util.h"
#include "kernels/net.h"
#include "kernels/net_act.h"
#include "kernels/net_cuda_internal.h"
#include "kernels/net_fused_parts.h"

namespace {

constexpr int kTU = 4;            // units a thread owns
constexpr int kMaxThreads = 256;  // threads a block

// Points a thread owns, by element type and channels: about 64-96 registers of accumulators.
template <typename T, int K>
struct tp_of {
  static constexpr int v = sizeof(T) == 4 ? (K <= 6 ? 4 : 2) : (K <= 3 ? 4 : (K <= 6 ? 2 : 1));
};

__device__ __forceinline__ float fma_(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double fma_(double a, double b, double c) { return fma(a, b, c); }

__device__ __forceinline__ void act_(int k, float a, float &s, float &s1, float &s2, float &s3) {
  s = tsr_net_act_value_f(k, a);
  tsr_net_act_derivs_f(k, a, s, &s1, &s2, &s3);
}
__device__ __forceinline__ void act_(int k, double a, double &s, double &s1, double &s2,
                                     double &s3) {
  s = tsr_net_act_value_d(k, a);
  tsr_net_act_derivs_d(k, a, s, &s1, &s2, &s3);
}

// N consecutive elements from/to shared or global memory, as wide loads where aligned.
template <int N, typename T>
__device__ __forceinline__ void ldv(const T *p, T *v) {
  if constexpr (sizeof(T) == 4 && N == 4) {
    const float4 t = *reinterpret_cast<const float4 *>(p);
    v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
  } else if constexpr (sizeof(T) == 4 && N == 2) {
    const float2 t = *reinterpret_cast<const float2 *>(p);
    v[0] = t.x, v[1] = t.y;
  } else if constexpr (sizeof(T) == 8 && N % 2 == 0) {
#pragma unroll
    for (int h = 0; h < N / 2; ++h) {
      const double2 t = *reinterpret_cast<const double2 *>(p + 2 * h);
      v[2 * h] = t.x, v[2 * h + 1] = t.y;
    }
  } else {
#pragma unroll
    for (int h = 0; h < N; ++h) v[h] = p[h];
  }
}

template <int N, typename T>
__device__ __forceinline__ void stv(T *p, const T *v) {
  if constexpr (sizeof(T) == 4 && N == 4) {
    *reinterpret_cast<float4 *>(p) = make_float4(v[0], v[1], v[2], v[3]);
  } else if constexpr (sizeof(T) == 4 && N == 2) {
    *reinterpret_cast<float2 *>(p) = make_float2(v[0], v[1]);
  } else if constexpr (sizeof(T) == 8 && N % 2 == 0) {
#pragma unroll
    for (int h = 0; h < N / 2; ++h)
      *reinterpret_cast<double2 *>(p + 2 * h) = make_double2(v[2 * h], v[2 * h + 1]);
  } else {
#pragma unroll
    for (int h = 0; h < N; ++h) p[h] = v[h];
  }
}

// Everything a fused kernel reads besides shared memory (passed by value).
struct fargs {
  tsr_net_kdims d;
  int nout, depth, npts, ntiles;
  int NUG, NPG, P, S;  // the tile geometry (above)
  size_t nparam, lstride; // lstride: elements of one layer's stored A
  const void *theta, *X, *dU;
  void *U, *A, *partial;
};

// Layer l's weights and biases in theta (kernels/net.h): layer 0 is width x nin, hidden layers
// width x width, the output layer (l = depth) nout x width; each layer's biases follow its
// weights.
__host__ __device__ __forceinline__ void offsets(const fargs &a, int l, size_t *wo, size_t *bo) {
  const size_t W = (size_t)a.d.width;
  const size_t off = l == 0 ? 0 : W * (a.d.nin + 1) + (size_t)(l - 1) * W * (W + 1);
  const size_t ni = l == 0 ? (size_t)a.d.nin : W, no = l == a.depth ? (size_t)a.nout : W;
  *wo = off;
  *bo = off + no * ni;
}

// The tile geometry for width W, channels K, TP points a thread, element size es.
struct geo {
  int NUG, NPG, P, S, threads;
};

inline geo geometry(int W, int K, int TP, int es) {
  geo g;
  g.NUG = W / kTU;
  g.NPG = g.NUG > 0 ? kMaxThreads / g.NUG : 0;
  g.P = g.NPG * TP;
  const int v = 16 / es;  // elements of 16 bytes
  int S = (K * g.P + v - 1) / v * v;
  if ((S / v) % 2 == 0) S += v;  // an odd number of 16-byte words: rows in distinct banks
  g.S = S;
  g.threads = g.NUG * g.NPG;
  return g;
}

// Layer 0 over the thread's units and points: Z_0's channels into Zs (shared) from X.
template <typename T, int K, int ND1, int NL, int TP>
__device__ __forceinline__ void layer0_z(const fargs &a, int tile, int ug, int pg, T *Zs) {
  constexpr int ND2 = NL > 0 ? 0 : K - 1 - ND1;
  const T *th = (const T *)a.theta, *X = (const T *)a.X;
  const int W = a.d.width, nin = a.d.nin, NUG = a.NUG, P = a.P, S = a.S;
  T xh[4][TP];
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int q = 0; q < TP; ++q) {
      const int p = tile * P + pg * TP + q;
      xh[j][q] = j < nin && p < a.npts
                     ? T(a.d.in_scale[j]) * X[j + (size_t)nin * p] + T(a.d.in_shift[j])
                     : T(0);
    }
#pragma unroll
  for (int r = 0; r < kTU; ++r) {
    const int i = ug + NUG * r;
    T w0[4], aj[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      w0[j] = j < nin ? th[i + (size_t)j * W] : T(0);
      aj[j] = w0[j] * T(a.d.in_scale[j < nin ? j : 0]);
    }
    const T b = th[(size_t)W * nin + i];
    T z[K][TP];
#pragma unroll
    for (int q = 0; q < TP; ++q) {
      T a0 = T(0);
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (j < nin) a0 = a0 + w0[j] * xh[j][q];
      T s, s1, s2, s3;
      act_(a.d.act, a0 + b, s, s1, s2, s3);
      z[0][q] = s;
#pragma unroll
      for (int j = 0; j < ND1; ++j) z[1 + j][q] = s1 * aj[j];
#pragma unroll
      for (int j = 0; j < ND2; ++j) z[1 + ND1 + j][q] = s2 * aj[j] * aj[j];
      if constexpr (NL > 0) {
        T sq = T(0);
#pragma unroll
        for (int j = 0; j < NL; ++j) sq += aj[j] * aj[j];
        z[K - 1][q] = s2 * sq;
      }
    }
#pragma unroll
    for (int c = 0; c < K; ++c) stv<TP>(Zs + (size_t)i * S + c * P + pg * TP, z[c]);
  }
}

// The chain rule forward on the thread's registers: acc = A (without bias) in, Z out.
template <typename T, int K, int ND1, int NL, int TP>
__device__ __forceinline__ void chain_fwd(int act, T b, T (&acc)[K][TP]) {
  constexpr int ND2 = NL > 0 ? 0 : K - 1 - ND1;
#pragma unroll
  for (int q = 0; q < TP; ++q) {
    T s, s1, s2, s3;
    act_(act, acc[0][q] + b, s, s1, s2, s3);
    acc[0][q] = s;
#pragma unroll
    for (int j = 0; j < ND2; ++j) {
      const T aj = acc[1 + j][q];
      acc[1 + ND1 + j][q] = s2 * aj * aj + s1 * acc[1 + ND1 + j][q];
    }
    if constexpr (NL > 0) {
      T sq = T(0);
#pragma unroll
      for (int j = 0; j < NL; ++j) sq += acc[1 + j][q] * acc[1 + j][q];
      acc[K - 1][q] = s2 * sq + s1 * acc[K - 1][q];
    }
#pragma unroll
    for (int j = 0; j < ND1; ++j) acc[1 + j][q] = s1 * acc[1 + j][q];
  }
}

// Z_l of the thread's units and points into Zs: layer 0 from X, else from the stored A_l.
template <typename T, int K, int ND1, int NL, int TP>
__device__ __forceinline__ void make_z(const fargs &a, int l, int tile, int ug, int pg, T *Zs) {
  if (l == 0) {
    layer0_z<T, K, ND1, NL, TP>(a, tile, ug, pg, Zs);
    return;
  }
  const T *th = (const T *)a.theta;
  const int W = a.d.width, NUG = a.NUG, P = a.P, S = a.S;
  size_t wo, bo;
  offsets(a, l, &wo, &bo);
  const T *Ag = (const T *)a.A + (size_t)(l - 1) * a.lstride + (size_t)tile * W * K * P;
#pragma unroll
  for (int r = 0; r < kTU; ++r) {
    const int i = ug + NUG * r;
    T v[K][TP];
#pragma unroll
    for (int c = 0; c < K; ++c) ldv<TP>(Ag + (size_t)i * K * P + c * P + pg * TP, v[c]);
    chain_fwd<T, K, ND1, NL, TP>(a.d.act, th[bo + i], v);
#pragma unroll
    for (int c = 0; c < K; ++c) stv<TP>(Zs + (size_t)i * S + c * P + pg * TP, v[c]);
  }
}

template <typename T, int K, int ND1, int NL>
__global__ void __launch_bounds__(kMaxThreads, 2) fused_fwd(fargs a) {
  constexpr int TP = tp_of<T, K>::v;
  extern __shared__ __align__(16) unsigned char smem_[];
  const int W = a.d.width, NUG = a.NUG, P = a.P, S = a.S, nout = a.nout, L = a.depth;
  T *Zs = reinterpret_cast<T *>(smem_), *Ws = Zs + (size_t)W * S;
  const T *th = (const T *)a.theta;
  const int tid = threadIdx.x, ug = tid % NUG, pg = tid / NUG, tile = blockIdx.x;
  const int nth = blockDim.x;

  layer0_z<T, K, ND1, NL, TP>(a, tile, ug, pg, Zs);
  for (int l = 1; l < L; ++l) {
    size_t wo, bo;
    offsets(a, l, &wo, &bo);
    __syncthreads(); // Ws free, Zs written
    for (int e = tid; e < W * W; e += nth) {
      const int i = e % W, k = e / W;
      Ws[k * W + (i % NUG) * kTU + i / NUG] = th[wo + e];
    }
    __syncthreads();
    T acc[kTU][K][TP];
#pragma unroll
    for (int r = 0; r < kTU; ++r)
#pragma unroll
      for (int c = 0; c < K; ++c)
#pragma unroll
        for (int q = 0; q < TP; ++q) acc[r][c][q] = T(0);
#pragma unroll 1
    for (int k = 0; k < W; ++k) {
      T w[kTU];
      ldv<kTU>(Ws + k * W + ug * kTU, w);
#pragma unroll
      for (int c = 0; c < K; ++c) {
        T z[TP];
        ldv<TP>(Zs + (size_t)k * S + c * P + pg * TP, z);
#pragma unroll
        for (int r = 0; r < kTU; ++r)
#pragma unroll
          for (int q = 0; q < TP; ++q) acc[r][c][q] = fma_(w[r], z[q], acc[r][c][q]);
      }
    }
    __syncthreads(); // every thread done reading Zs
    T *Ag = (T *)a.A + (size_t)(l - 1) * a.lstride + (size_t)tile * W * K * P;
#pragma unroll
    for (int r = 0; r < kTU; ++r) {
      const int i = ug + NUG * r;
#pragma unroll
      for (int c = 0; c < K; ++c) stv<TP>(Ag + (size_t)i * K * P + c * P + pg * TP, acc[r][c]);
      chain_fwd<T, K, ND1, NL, TP>(a.d.act, th[bo + i], acc[r]);
#pragma unroll
      for (int c = 0; c < K; ++c) stv<TP>(Zs + (size_t)i * S + c * P + pg * TP, acc[r][c]);
    }
  }
  // the output layer: U = W_L Z + b (value channel)
  size_t wo, bo;
  offsets(a, L, &wo, &bo);
  __syncthreads();
  for (int e = tid; e < nout * W; e += nth) Ws[e] = th[wo + e];
  __syncthreads();
  T *U = (T *)a.U;
  for (int e = tid; e < nout * K * P; e += nth) {
    const int pl = e % P, c = (e / P) % K, o = e / (P * K);
    const int p = tile * P + pl;
    if (p >= a.npts) continue;
    T u = T(0);
    for (int k = 0; k < W; ++k) u = fma_(Ws[o + k * nout], Zs[(size_t)k * S + c * P + pl], u);
    if (c == 0) u = u + th[bo + o];
    U[o + (size_t)nout * ((size_t)c * a.npts + p)] = u;
  }
}

template <typename T, int K, int ND1, int NL>
__global__ void __launch_bounds__(kMaxThreads, 1) fused_bwd(fargs a) {
  constexpr int TP = tp_of<T, K>::v;
  constexpr int ND2 = NL > 0 ? 0 : K - 1 - ND1;
  extern __shared__ __align__(16) unsigned char smem_[];
  const int W = a.d.width, NUG = a.NUG, NPG = a.NPG, P = a.P, S = a.S, nout = a.nout;
  const int L = a.depth, nin = a.d.nin, act = a.d.act;
  T *DA = reinterpret_cast<T *>(smem_), *ZB = DA + (size_t)W * S, *Ws = ZB + (size_t)W * S;
  T *dUs = Ws + (size_t)W * (W > nout ? W : nout);
  T *RED = DA; // layer 0's reduction, once DA and ZB are free
  const T *th = (const T *)a.theta, *dU = (const T *)a.dU, *X = (const T *)a.X;
  T *part = (T *)a.partial + (size_t)blockIdx.x * a.nparam;
  const int tid = threadIdx.x, ug = tid % NUG, pg = tid / NUG, nth = blockDim.x;

  for (int tile = blockIdx.x; tile < a.ntiles; tile += gridDim.x) {
    const bool first = tile == (int)blockIdx.x;
    auto add = [&](size_t idx, T v) { part[idx] = first ? v : part[idx] + v; };
    size_t wo, bo;
    offsets(a, L, &wo, &bo);
    __syncthreads(); // the last tile's readers are done
    for (int e = tid; e < nout * K * P; e += nth) {
      const int pl = e % P, c = (e / P) % K, o = e / (P * K);
      const int p = tile * P + pl;
      dUs[e] = p < a.npts ? dU[o + (size_t)nout * ((size_t)c * a.npts + p)] : T(0);
    }
    for (int e = tid; e < nout * W; e += nth) Ws[e] = th[wo + e];
    make_z<T, K, ND1, NL, TP>(a, L - 1, tile, ug, pg, ZB);
    __syncthreads();
    // the output layer (linear): dW_L = dU Z_(L-1)^T, db_L = sum of dU's value channel
    for (int e = tid; e < nout * W; e += nth) {
      const int o = e % nout, k = e / nout;
      T s = T(0);
      for (int c = 0; c < K; ++c)
        for (int pl = 0; pl < P; ++pl)
          s = fma_(dUs[(o * K + c) * P + pl], ZB[(size_t)k * S + c * P + pl], s);
      add(wo + e, s);
    }
    for (int o = tid; o < nout; o += nth) {
      T s = T(0);
      for (int pl = 0; pl < P; ++pl) s = s + dUs[o * K * P + pl];
      add(bo + o, s);
    }
    // dL/dZ_(L-1) = W_L^T dU on the thread's units and points
    T g[kTU][K][TP];
#pragma unroll
    for (int r = 0; r < kTU; ++r) {
      const int k = ug + NUG * r;
#pragma unroll
      for (int c = 0; c < K; ++c)
#pragma unroll
        for (int q = 0; q < TP; ++q) {
          T s = T(0);
          for (int o = 0; o < nout; ++o)
            s = fma_(Ws[o + k * nout], dUs[(o * K + c) * P + pg * TP + q], s);
          g[r][c][q] = s;
        }
    }
    for (int l = L - 1; l >= 1; --l) {
      offsets(a, l, &wo, &bo);
      // the chain rule in reverse: g = dL/dZ_l in, dL/dA_l out
      const T *Ag = (const T *)a.A + (size_t)(l - 1) * a.lstride + (size_t)tile * W * K * P;
#pragma unroll
      for (int r = 0; r < kTU; ++r) {
        const int i = ug + NUG * r;
        const T b = th[bo + i];
        T av[K][TP];
#pragma unroll
        for (int c = 0; c < K; ++c) ldv<TP>(Ag + (size_t)i * K * P + c * P + pg * TP, av[c]);
#pragma unroll
        for (int q = 0; q < TP; ++q) {
          T s, s1, s2, s3;
          act_(act, av[0][q] + b, s, s1, s2, s3);
          T da0 = g[r][0][q] * s1, sq = T(0);
          const T gL = NL > 0 ? g[r][K - 1][q] : T(0); // the Laplacian's dL/dy
#pragma unroll
          for (int j = 0; j < ND1; ++j) {
            const T aj = av[1 + j][q], gj = g[r][1 + j][q];
            da0 += gj * s2 * aj;
            T dj = gj * s1;
            if (j < ND2) {
              const T gjj = g[r][1 + ND1 + j][q];
              da0 += gjj * (s3 * aj * aj + s2 * av[1 + ND1 + j][q]);
              dj += gjj * T(2) * s2 * aj;
              g[r][1 + ND1 + j][q] = gjj * s1;
            } else if (j < NL) {
              sq += aj * aj;
              dj += gL * T(2) * s2 * aj;
            }
            g[r][1 + j][q] = dj;
          }
          if constexpr (NL > 0) {
            da0 += gL * (s3 * sq + s2 * av[K - 1][q]);
            g[r][K - 1][q] = gL * s1;
          }
          g[r][0][q] = da0;
        }
      }
      __syncthreads(); // DA, ZB, Ws free
#pragma unroll
      for (int r = 0; r < kTU; ++r) {
        const int i = ug + NUG * r;
#pragma unroll
        for (int c = 0; c < K; ++c) stv<TP>(DA + (size_t)i * S + c * P + pg * TP, g[r][c]);
      }
      for (int e = tid; e < W * W; e += nth) {
        const int i = e % W, k = e / W;
        Ws[i * W + (k % NUG) * kTU + k / NUG] = th[wo + e];
      }
      make_z<T, K, ND1, NL, TP>(a, l - 1, tile, ug, pg, ZB);
      __syncthreads();
      for (int i = tid; i < W; i += nth) {
        T s = T(0);
        for (int pl = 0; pl < P; ++pl) s = s + DA[(size_t)i * S + pl];
        add(bo + i, s);
      }
      // dW_l = dA_l Z_(l-1)^T over the tile's K P columns, 4 x 4 entries a thread
      for (int qq = tid; qq < NUG * NUG; qq += nth) {
        const int ig = qq % NUG, kg = qq / NUG;
        T w[kTU][kTU];
#pragma unroll
        for (int r = 0; r < kTU; ++r)
#pragma unroll
          for (int r2 = 0; r2 < kTU; ++r2) w[r][r2] = T(0);
        for (int c = 0; c < K; ++c)
          for (int pl = 0; pl < P; pl += TP) {
            T x[kTU][TP], y[kTU][TP];
#pragma unroll
            for (int r = 0; r < kTU; ++r) {
              ldv<TP>(DA + (size_t)(ig + NUG * r) * S + c * P + pl, x[r]);
              ldv<TP>(ZB + (size_t)(kg + NUG * r) * S + c * P + pl, y[r]);
            }
#pragma unroll
            for (int v = 0; v < TP; ++v)
#pragma unroll
              for (int r = 0; r < kTU; ++r)
#pragma unroll
                for (int r2 = 0; r2 < kTU; ++r2) w[r][r2] = fma_(x[r][v], y[r2][v], w[r][r2]);
          }
#pragma unroll
        for (int r = 0; r < kTU; ++r)
#pragma unroll
          for (int r2 = 0; r2 < kTU; ++r2)
            add(wo + (ig + NUG * r) + (size_t)(kg + NUG * r2) * W, w[r][r2]);
      }
      // dL/dZ_(l-1) = W_l^T dA_l
#pragma unroll
      for (int r = 0; r < kTU; ++r)
#pragma unroll
        for (int c = 0; c < K; ++c)
#pragma unroll
          for (int q = 0; q < TP; ++q) g[r][c][q] = T(0);
#pragma unroll 2
      for (int i = 0; i < W; ++i) {
        T w[kTU];
        ldv<kTU>(Ws + i * W + ug * kTU, w);
#pragma unroll
        for (int c = 0; c < K; ++c) {
          T x[TP];
          ldv<TP>(DA + (size_t)i * S + c * P + pg * TP, x);
#pragma unroll
          for (int r = 0; r < kTU; ++r)
#pragma unroll
            for (int q = 0; q < TP; ++q) g[r][c][q] = fma_(w[r], x[q], g[r][c][q]);
        }
      }
    }
    // layer 0 from g = dL/dZ_0: db_0 (sum 0) and dW_0(:, j) (sum 1 + j), as layer0_bwd in
    // kernels/net.cu; A_0 recomputed as layer0_z computed it
    offsets(a, 0, &wo, &bo);
    T sums[kTU][1 + 4];
#pragma unroll
    for (int r = 0; r < kTU; ++r) {
      const int i = ug + NUG * r;
      T w0[4], aj[4], sc[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        w0[j] = j < nin ? th[i + (size_t)j * W] : T(0);
        sc[j] = T(a.d.in_scale[j < nin ? j : 0]);
        aj[j] = w0[j] * sc[j];
      }
      const T b = th[(size_t)W * nin + i];
#pragma unroll
      for (int k = 0; k < 5; ++k) sums[r][k] = T(0);
#pragma unroll
      for (int q = 0; q < TP; ++q) {
        const int p = tile * P + pg * TP + q;
        T xh[4];
#pragma unroll
        for (int j = 0; j < 4; ++j)
          xh[j] = j < nin && p < a.npts
                      ? T(a.d.in_scale[j]) * X[j + (size_t)nin * p] + T(a.d.in_shift[j])
                      : T(0);
        T a0 = T(0);
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (j < nin) a0 = a0 + w0[j] * xh[j];
        T s, s1, s2, s3;
        act_(act, a0 + b, s, s1, s2, s3);
        T da0 = g[r][0][q] * s1, daj[4];
#pragma unroll
        for (int j = 0; j < ND1; ++j) {
          const T dyj = g[r][1 + j][q];
          da0 += dyj * s2 * aj[j];
          daj[j] = dyj * s1;
        }
#pragma unroll
        for (int j = 0; j < ND2; ++j) {
          const T dyjj = g[r][1 + ND1 + j][q];
          da0 += dyjj * (s3 * aj[j] * aj[j]);
          daj[j] += dyjj * T(2) * s2 * aj[j];
        }
        if constexpr (NL > 0) {
          const T gL = g[r][K - 1][q];
          T sq = T(0);
#pragma unroll
          for (int j = 0; j < NL; ++j) {
            sq += aj[j] * aj[j];
            daj[j] += gL * T(2) * s2 * aj[j];
          }
          da0 += gL * (s3 * sq);
        }
        sums[r][0] += da0;
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (j < nin) sums[r][1 + j] += j < ND1 ? da0 * xh[j] + sc[j] * daj[j] : da0 * xh[j];
      }
    }
    __syncthreads(); // DA and ZB free: RED over them
#pragma unroll
    for (int r = 0; r < kTU; ++r)
#pragma unroll
      for (int k = 0; k < 5; ++k)
        if (k <= nin) RED[((size_t)pg * (1 + nin) + k) * W + ug + NUG * r] = sums[r][k];
    __syncthreads();
    for (int e = tid; e < (1 + nin) * W; e += nth) {
      const int k = e / W, i = e % W;
      T s = T(0);
      for (int h = 0; h < NPG; ++h) s = s + RED[((size_t)h * (1 + nin) + k) * W + i];
      add(k == 0 ? bo + i : wo + i + (size_t)(k - 1) * W, s);
    }
  }
}

// grad[k] = sum over the grid's slices of partial, in block order.
template <typename T>
__global__ void fused_finish(int nblk, size_t nparam, const T *__restrict__ partial,
                             T *__restrict__ grad) {
  const size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= nparam) return;
  T s = T(0);
  for (int b = 0; b < nblk; ++b) s = s + partial[(size_t)b * nparam + k];
  grad[k] = s;
}

// The kernels of (element type, K, nd1, NL); nullptr where the fused path has none.
using kern = tsr_net_fused_kern;

template <typename T, int K, int ND1, int NL>
kern kern_of() {
  return {reinterpret_cast<const void *>(&fused_fwd<T, K, ND1, NL>),
          reinterpret_cast<const void *>(&fused_bwd<T, K, ND1, NL>), tp_of<T, K>::v};
}

template <typename T>
kern pick(int nd1, int nd2, int lap) {
  // the channel sets of the PINN method: steady (nd1 = nd2 = nin), with time (nd1 = nin,
  // nd2 = nin - 1), values alone (0, 0); a Laplacian of one second derivative is the
  // diagonal mode's channel (lap is set only with nd2 > 0: kernels/net_cuda_internal.h)
  if (lap && nd2 > 1) {
    if (nd1 == 2 && nd2 == 2) return kern_of<T, 4, 2, 2>();
    if (nd1 == 3 && nd2 == 3) return kern_of<T, 5, 3, 3>();
    if (nd1 == 3 && nd2 == 2) return kern_of<T, 5, 3, 2>();
    if (nd1 == 4 && nd2 == 3) return kern_of<T, 6, 4, 3>();
    return {nullptr, nullptr, 0};
  }
  if (nd1 == 0 && nd2 == 0) return kern_of<T, 1, 0, 0>();
  if (nd1 == 1 && nd2 == 1) return kern_of<T, 3, 1, 0>();
  if (nd1 == 2 && nd2 == 1) return kern_of<T, 4, 2, 0>();
  if (lap) return {nullptr, nullptr, 0};
  if (nd1 == 2 && nd2 == 2) return kern_of<T, 5, 2, 0>();
  if (nd1 == 3 && nd2 == 3) return kern_of<T, 7, 3, 0>();
  if (nd1 == 3 && nd2 == 2) return kern_of<T, 6, 3, 0>();
  if (nd1 == 4 && nd2 == 3) return kern_of<T, 8, 4, 0>();
  return {nullptr, nullptr, 0};
}


}  // namespace
