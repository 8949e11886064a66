// The layers path's kernels (kernels/net_layer.cu says what they do), in a header of their own
// so that tests/unit/emulate_net_layer.cpp can run them on the CPU (one thread per CUDA
// thread, a std::barrier for __syncthreads): it defines the CUDA keywords away and
// TSR_NET_LAYER_SMEM to its own shared-memory array before including this file.
#ifndef TSR_NET_LAYER_CUH
#define TSR_NET_LAYER_CUH

#include "kernels/net_act.h"

#ifndef TSR_NET_LAYER_SMEM
#define TSR_NET_LAYER_SMEM extern __shared__ float4 smem4[]
#endif

namespace {

constexpr int kThreads = 256;
constexpr int kMaxWidth = 128;
// Blocks of a launch at most (each walks its tiles in order): the reverse pass's bias partials
// are width x blocks, within the cuBLAS path's partial buffer (kernels/net_cuda.c).
constexpr int kMaxBlocks = 1024;

// Shared memory of a block: the weights (w x w) and the input tile (K x w rows of P points,
// padded by 2 so that the transposing stores of consecutive units fall in different banks).
__host__ __device__ inline int tile_points(int w) { return 2 * (kThreads / (w / 4)); }
__host__ __device__ inline int tile_stride(int w) { return tile_points(w) + 2; }
inline size_t smem_bytes(int w, int K) {
  return sizeof(float) * ((size_t)w * w + (size_t)K * w * tile_stride(w));
}

template <int ND1, int ND2, int LAP>
struct chans {
  static constexpr int nsec = LAP ? (ND2 > 0 ? 1 : 0) : ND2;
  static constexpr int K = 1 + ND1 + nsec;
};

// The input tile: channel c, unit k, local point q at Zs[(c * w + k) * S + q], from the layer
// array In (unit fastest; kernels/net.h's layout), zero past npts.
template <int K>
__device__ __forceinline__ void load_tile(const float *__restrict__ In, int w, int npts, int p0,
                                          float *Zs) {
  const int P = tile_points(w), S = tile_stride(w);
  const int n = w * P;
  for (int c = 0; c < K; ++c) {
    const float *src = In + (size_t)w * ((size_t)c * npts + p0);
    for (int e = threadIdx.x; e < n; e += kThreads) {
      const int k = e % w, q = e / w;
      Zs[(c * w + k) * S + q] = p0 + q < npts ? src[e] : 0.0f;
    }
  }
}

// acc[c][pp][u] += sum over k of Wt(u0 + u, k) Zs(c, k, q0 + pp), Wt(i, k) at Ws[k * w + i].
template <int K>
__device__ __forceinline__ void product(const float *Ws, const float *Zs, int w, int u0, int q0,
                                        float (&acc)[K][2][4]) {
  const int S = tile_stride(w);
#pragma unroll 4
  for (int k = 0; k < w; ++k) {
    const float4 wv = *reinterpret_cast<const float4 *>(Ws + k * w + u0);
#pragma unroll
    for (int c = 0; c < K; ++c) {
      const float2 z = *reinterpret_cast<const float2 *>(Zs + (c * w + k) * S + q0);
      acc[c][0][0] = fmaf(wv.x, z.x, acc[c][0][0]);
      acc[c][0][1] = fmaf(wv.y, z.x, acc[c][0][1]);
      acc[c][0][2] = fmaf(wv.z, z.x, acc[c][0][2]);
      acc[c][0][3] = fmaf(wv.w, z.x, acc[c][0][3]);
      acc[c][1][0] = fmaf(wv.x, z.y, acc[c][1][0]);
      acc[c][1][1] = fmaf(wv.y, z.y, acc[c][1][1]);
      acc[c][1][2] = fmaf(wv.z, z.y, acc[c][1][2]);
      acc[c][1][3] = fmaf(wv.w, z.y, acc[c][1][3]);
    }
  }
}

// The tile of points from p0 of the layer array In into Zs, and its product with Ws into acc
// (overwritten). Every thread of the block calls it, tile after tile.
template <int K>
__device__ __forceinline__ void tile_product(const float *__restrict__ In, int w, int npts, int p0,
                                             const float *Ws, float *Zs, int u0, int q0,
                                             float (&acc)[K][2][4]) {
  __syncthreads(); // the previous tile's products (and epilogue) are done with Zs
  load_tile<K>(In, w, npts, p0, Zs);
  __syncthreads();
#pragma unroll
  for (int c = 0; c < K; ++c)
#pragma unroll
    for (int pp = 0; pp < 2; ++pp)
#pragma unroll
      for (int u = 0; u < 4; ++u) acc[c][pp][u] = 0.0f;
  product<K>(Ws, Zs, w, u0, q0, acc);
}

__device__ __forceinline__ float4 ld4(const float *p) {
  return *reinterpret_cast<const float4 *>(p);
}
__device__ __forceinline__ void st4(float *p, const float (&v)[4]) {
  *reinterpret_cast<float4 *>(p) = make_float4(v[0], v[1], v[2], v[3]);
}

// Z = s(A + b) on every channel by the chain rule (kernels/net.h), one (unit, point) pair.
template <int ACT, int ND1, int ND2, int LAP>
__device__ __forceinline__ void chain_fwd(float b, const float (&a)[chans<ND1, ND2, LAP>::K],
                                          float (&z)[chans<ND1, ND2, LAP>::K]) {
  const float a0 = a[0] + b;
  const float y = tsr_net_act_value_f(ACT, a0);
  float s1, s2, s3;
  tsr_net_act_derivs_f(ACT, a0, y, &s1, &s2, &s3);
  z[0] = y;
#pragma unroll
  for (int j = 0; j < ND1; ++j) z[1 + j] = s1 * a[1 + j];
  if (LAP) {
    if (ND2 > 0) {
      float q = 0.0f;
#pragma unroll
      for (int j = 0; j < ND2; ++j) q += a[1 + j] * a[1 + j];
      z[1 + ND1] = s2 * q + s1 * a[1 + ND1];
    }
  } else {
#pragma unroll
    for (int j = 0; j < ND2; ++j) z[1 + ND1 + j] = s2 * a[1 + j] * a[1 + j] + s1 * a[1 + ND1 + j];
  }
}

// The reverse of chain_fwd: g = dL/dZ in, dL/dA out (in place), at pre-activation a (+ b).
template <int ACT, int ND1, int ND2, int LAP>
__device__ __forceinline__ void chain_bwd(float b, const float (&a)[chans<ND1, ND2, LAP>::K],
                                          float (&g)[chans<ND1, ND2, LAP>::K]) {
  const float a0 = a[0] + b;
  const float y = tsr_net_act_value_f(ACT, a0);
  float s1, s2, s3;
  tsr_net_act_derivs_f(ACT, a0, y, &s1, &s2, &s3);
  float da0 = g[0] * s1, d[ND1 > 0 ? ND1 : 1];
#pragma unroll
  for (int j = 0; j < ND1; ++j) {
    da0 += g[1 + j] * s2 * a[1 + j];
    d[j] = g[1 + j] * s1;
  }
  if (LAP) {
    if (ND2 > 0) {
      const float gl = g[1 + ND1];
      float q = 0.0f;
#pragma unroll
      for (int j = 0; j < ND2; ++j) q += a[1 + j] * a[1 + j];
      da0 += gl * (s3 * q + s2 * a[1 + ND1]);
#pragma unroll
      for (int j = 0; j < ND2; ++j) d[j] += gl * 2.0f * s2 * a[1 + j];
      g[1 + ND1] = gl * s1;
    }
  } else {
#pragma unroll
    for (int j = 0; j < ND2; ++j) {
      const float gjj = g[1 + ND1 + j];
      da0 += gjj * (s3 * a[1 + j] * a[1 + j] + s2 * a[1 + ND1 + j]);
      d[j] += gjj * 2.0f * s2 * a[1 + j];
      g[1 + ND1 + j] = gjj * s1;
    }
  }
#pragma unroll
  for (int j = 0; j < ND1; ++j) g[1 + j] = d[j];
  g[0] = da0;
}

// Forward: A = W Zin, Z = s(A + b). W column-major w x w (W(i, k) at W[i + k w]).
template <int ACT, int ND1, int ND2, int LAP>
__global__ void __launch_bounds__(kThreads)
    layer_fwd(int w, int npts, const float *__restrict__ W, const float *__restrict__ b,
              const float *__restrict__ Zin, float *__restrict__ A, float *__restrict__ Z) {
  constexpr int K = chans<ND1, ND2, LAP>::K;
  TSR_NET_LAYER_SMEM;
  float *Ws = reinterpret_cast<float *>(smem4), *Zs = Ws + w * w;
  const int tx = threadIdx.x % (w / 4), ty = threadIdx.x / (w / 4);
  const int u0 = 4 * tx, q0 = 2 * ty, P = tile_points(w), tiles = (npts + P - 1) / P;
  for (int e = threadIdx.x; e < w * w; e += kThreads) Ws[e] = W[e]; // Ws[k w + i] = W(i, k)
  float bu[4];
#pragma unroll
  for (int u = 0; u < 4; ++u) bu[u] = b[u0 + u];
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int p0 = t * P;
    float acc[K][2][4];
    tile_product<K>(Zin, w, npts, p0, Ws, Zs, u0, q0, acc);
#pragma unroll
    for (int pp = 0; pp < 2; ++pp) {
      const int p = p0 + q0 + pp;
      if (p >= npts) continue;
      float zo[K][4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        float a[K], z[K];
#pragma unroll
        for (int c = 0; c < K; ++c) a[c] = acc[c][pp][u];
        chain_fwd<ACT, ND1, ND2, LAP>(bu[u], a, z);
#pragma unroll
        for (int c = 0; c < K; ++c) zo[c][u] = z[c];
      }
#pragma unroll
      for (int c = 0; c < K; ++c) {
        const size_t o = (size_t)u0 + (size_t)w * ((size_t)c * npts + p);
        const float av[4] = {acc[c][pp][0], acc[c][pp][1], acc[c][pp][2], acc[c][pp][3]};
        st4(A + o, av);
        st4(Z + o, zo[c]);
      }
    }
  }
}

// Reverse: G = W^T dA (the dL/dZ of the layer below), then dA_prev = its chain rule's reverse
// at A_prev + b_prev; the block's sums of dA_prev's value channel per unit to
// partial[i * gridDim.x + blockIdx.x].
template <int ACT, int ND1, int ND2, int LAP>
__global__ void __launch_bounds__(kThreads)
    layer_bwd(int w, int npts, const float *__restrict__ W, const float *__restrict__ bprev,
              const float *__restrict__ dA, const float *__restrict__ Aprev,
              float *__restrict__ dAprev, float *__restrict__ partial) {
  constexpr int K = chans<ND1, ND2, LAP>::K;
  TSR_NET_LAYER_SMEM;
  float *Ws = reinterpret_cast<float *>(smem4), *Zs = Ws + w * w;
  const int tx = threadIdx.x % (w / 4), ty = threadIdx.x / (w / 4), ny = kThreads / (w / 4);
  const int u0 = 4 * tx, q0 = 2 * ty, P = tile_points(w), tiles = (npts + P - 1) / P;
  // Ws[k w + i] = W^T(i, k) = W(k, i) = W[k + i w]
  for (int e = threadIdx.x; e < w * w; e += kThreads) {
    const int k = e % w, i = e / w;
    Ws[k * w + i] = W[e];
  }
  float bu[4], sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int u = 0; u < 4; ++u) bu[u] = bprev[u0 + u];
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int p0 = t * P;
    float acc[K][2][4];
    tile_product<K>(dA, w, npts, p0, Ws, Zs, u0, q0, acc);
#pragma unroll
    for (int pp = 0; pp < 2; ++pp) {
      const int p = p0 + q0 + pp;
      if (p >= npts) continue;
      float4 av[K];
#pragma unroll
      for (int c = 0; c < K; ++c)
        av[c] = ld4(Aprev + (size_t)u0 + (size_t)w * ((size_t)c * npts + p));
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        float a[K], g[K];
#pragma unroll
        for (int c = 0; c < K; ++c) {
          a[c] = u == 0 ? av[c].x : u == 1 ? av[c].y : u == 2 ? av[c].z : av[c].w;
          g[c] = acc[c][pp][u];
        }
        chain_bwd<ACT, ND1, ND2, LAP>(bu[u], a, g);
#pragma unroll
        for (int c = 0; c < K; ++c) acc[c][pp][u] = g[c];
        sum[u] += g[0];
      }
#pragma unroll
      for (int c = 0; c < K; ++c)
        st4(dAprev + (size_t)u0 + (size_t)w * ((size_t)c * npts + p), acc[c][pp]);
    }
  }
  // the bias partials: the ny point rows of each unit summed in a fixed tree (reusing Zs)
  __syncthreads();
#pragma unroll
  for (int u = 0; u < 4; ++u) Zs[ty * w + u0 + u] = sum[u];
  for (int s = ny / 2; s > 0; s /= 2) {
    __syncthreads();
    if (ty < s)
#pragma unroll
      for (int u = 0; u < 4; ++u) Zs[ty * w + u0 + u] += Zs[(ty + s) * w + u0 + u];
  }
  __syncthreads();
  for (int i = threadIdx.x; i < w; i += kThreads)
    partial[(size_t)i * gridDim.x + blockIdx.x] = Zs[i];
}

// Blocks of a launch over npts points: one a tile, at most kMaxBlocks.
__host__ __device__ inline int layer_blocks(int w, int npts) {
  const int P = tile_points(w), tiles = (npts + P - 1) / P;
  return tiles < kMaxBlocks ? (tiles > 0 ? tiles : 1) : kMaxBlocks;
}

} // namespace

#endif
