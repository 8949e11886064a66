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
// Blocks of a launch at most, each walking its tiles in order: two resident blocks on each of
// an H100's or H200's 132 multiprocessors, so that every block loads the weights once and
// walks about as many tiles as the others. A constant (not the device's count), so that the
// bias partials' order, and with it the bits, depends on the network and npts alone; the
// reverse pass's partials are width x blocks, within the cuBLAS path's partial buffer
// (kernels/net_cuda.c).
constexpr int kMaxBlocks = 264;
constexpr int kPts = 4; // points a thread (times 4 units times K channels in registers)

// w is a power of two (w / 4 divides 256): its log, for the tile's index arithmetic.
__host__ __device__ inline int log2w(int w) {
  int l = 0;
  while ((1 << l) < w) ++l;
  return l;
}

// Shared memory of a block: the weights (w rows of w + 4) and the input tile (K channels x P
// points, each point's w units in a row of w + 4, as in global memory). The 4 floats of padding
// keep rows 16-byte aligned and put consecutive rows 4 banks apart, so that the rows a warp
// reads at once (its threads' points, ty + ny pp) fall in different banks.
__host__ __device__ inline int tile_points(int w) { return kPts * (kThreads / (w / 4)); }
__host__ __device__ inline int row_stride(int w) { return w + 4; }
inline size_t smem_bytes(int w, int K) {
  return sizeof(float) * (size_t)row_stride(w) * ((size_t)w + (size_t)K * tile_points(w));
}

template <int ND1, int ND2, int LAP>
struct chans {
  static constexpr int nsec = LAP ? (ND2 > 0 ? 1 : 0) : ND2;
  static constexpr int K = 1 + ND1 + nsec;
};

// The input tile: channel c, local point q, unit k at Zs[(c P + q) S + k], copied 16 bytes at a
// time from the layer array In (unit fastest; kernels/net.h's layout), zero past npts.
template <int K>
__device__ __forceinline__ void load_tile(const float *__restrict__ In, int w, int lw, int npts,
                                          int p0, int P, float *Zs) {
  const int S = row_stride(w), n4 = (w * P) >> 2;
#pragma unroll
  for (int c = 0; c < K; ++c) {
    const float4 *src = reinterpret_cast<const float4 *>(In + (size_t)w * ((size_t)c * npts + p0));
    for (int e = threadIdx.x; e < n4; e += kThreads) {
      const int k = (e << 2) & (w - 1), q = (e << 2) >> lw;
      const float4 v = p0 + q < npts ? src[e] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      *reinterpret_cast<float4 *>(Zs + (c * P + q) * S + k) = v;
    }
  }
}

// acc[c][pp][u] = sum over k of Wt(u0 + u, k) Zs(c, q = ty + ny pp, k), Wt(i, k) at
// Ws[k S + i]; the k in order, four at a time (a float4 of Zs along k, four of Ws along u).
template <int K>
__device__ __forceinline__ void product(const float *Ws, const float *Zs, int w, int u0, int ty,
                                        int ny, float (&acc)[K][kPts][4]) {
  const int S = row_stride(w), P = tile_points(w);
#pragma unroll
  for (int c = 0; c < K; ++c)
#pragma unroll
    for (int pp = 0; pp < kPts; ++pp)
#pragma unroll
      for (int u = 0; u < 4; ++u) acc[c][pp][u] = 0.0f;
  for (int k = 0; k < w; k += 4) {
    float4 wv[4];
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) wv[kk] = *reinterpret_cast<const float4 *>(Ws + (k + kk) * S + u0);
#pragma unroll
    for (int c = 0; c < K; ++c)
#pragma unroll
      for (int pp = 0; pp < kPts; ++pp) {
        const float4 z =
            *reinterpret_cast<const float4 *>(Zs + (c * P + ty + ny * pp) * S + k);
        float *a = acc[c][pp];
        a[0] = fmaf(wv[0].x, z.x, a[0]);
        a[1] = fmaf(wv[0].y, z.x, a[1]);
        a[2] = fmaf(wv[0].z, z.x, a[2]);
        a[3] = fmaf(wv[0].w, z.x, a[3]);
        a[0] = fmaf(wv[1].x, z.y, a[0]);
        a[1] = fmaf(wv[1].y, z.y, a[1]);
        a[2] = fmaf(wv[1].z, z.y, a[2]);
        a[3] = fmaf(wv[1].w, z.y, a[3]);
        a[0] = fmaf(wv[2].x, z.z, a[0]);
        a[1] = fmaf(wv[2].y, z.z, a[1]);
        a[2] = fmaf(wv[2].z, z.z, a[2]);
        a[3] = fmaf(wv[2].w, z.z, a[3]);
        a[0] = fmaf(wv[3].x, z.w, a[0]);
        a[1] = fmaf(wv[3].y, z.w, a[1]);
        a[2] = fmaf(wv[3].z, z.w, a[2]);
        a[3] = fmaf(wv[3].w, z.w, a[3]);
      }
  }
}

// The tile of points from p0 of the layer array In into Zs, and its product with Ws into acc
// (overwritten). Every thread of the block calls it, tile after tile.
template <int K>
__device__ __forceinline__ void tile_product(const float *__restrict__ In, int w, int lw,
                                             int npts, int p0, const float *Ws, float *Zs, int u0,
                                             int ty, int ny, float (&acc)[K][kPts][4]) {
  __syncthreads(); // the previous tile's products (and epilogue) are done with Zs
  load_tile<K>(In, w, lw, npts, p0, tile_points(w), Zs);
  __syncthreads();
  product<K>(Ws, Zs, w, u0, ty, ny, acc);
}

// v[u] (one sum) or v[u][s] (several): block_sums' accessor.
__device__ __forceinline__ float sum_of(const float (&v)[4], int u, int) { return v[u]; }
__device__ __forceinline__ float sum_of(const float (&v)[4][5], int u, int s) { return v[u][s]; }

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

// Component u (0..3, unrolled) of a float4, as an lvalue.
__device__ __forceinline__ float &lane4(float4 &v, int u) {
  return u == 0 ? v.x : u == 1 ? v.y : u == 2 ? v.z : v.w;
}

// The input tile from a pre-activation array Ain (layer l - 1's A, stored without its bias):
// Z = s(A + b) by chain_fwd as it is staged, the same arithmetic on the same values as an
// epilogue storing Z would do, so that Z never crosses DRAM. A thread takes (point, 4 units)
// pairs, all K channels of each; its units are the same for every pair (4 kThreads is a
// multiple of w), so bq holds their bias.
template <int ACT, int ND1, int ND2, int LAP>
__device__ __forceinline__ void load_tile_act(const float *__restrict__ Ain, const float (&bq)[4],
                                              int w, int lw, int npts, int p0, int P, float *Zs) {
  constexpr int K = chans<ND1, ND2, LAP>::K;
  const int S = row_stride(w), n4 = (w * P) >> 2;
  for (int e = threadIdx.x; e < n4; e += kThreads) {
    const int k = (e << 2) & (w - 1), q = (e << 2) >> lw;
    float4 v[K];
    if (p0 + q < npts) {
#pragma unroll
      for (int c = 0; c < K; ++c) v[c] = ld4(Ain + (size_t)w * ((size_t)c * npts + p0 + q) + k);
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        float a[K], z[K];
#pragma unroll
        for (int c = 0; c < K; ++c) a[c] = lane4(v[c], u);
        chain_fwd<ACT, ND1, ND2, LAP>(bq[u], a, z);
#pragma unroll
        for (int c = 0; c < K; ++c) lane4(v[c], u) = z[c];
      }
    } else {
#pragma unroll
      for (int c = 0; c < K; ++c) v[c] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
#pragma unroll
    for (int c = 0; c < K; ++c) *reinterpret_cast<float4 *>(Zs + (c * P + q) * S + k) = v[c];
  }
}

// A thread's place in the block and the tiles (every kernel's): log2 w, the row stride; the
// thread's unit quad tx (units u0 = 4 tx ..) and point row ty of ny (points ty + ny pp); P
// points a tile, tiles over npts.
struct geom {
  int lw, S, tx, ty, ny, u0, P, tiles;
};
__device__ __forceinline__ geom block_geom(int w, int npts) {
  const int lw = log2w(w), nx = w / 4, tx = threadIdx.x & (nx - 1), P = tile_points(w);
  return {lw, row_stride(w), tx, (int)(threadIdx.x >> (lw - 2)), kThreads / nx, 4 * tx, P,
          (npts + P - 1) / P};
}

// Ws[k S + i] = W^T(i, k) = W(k, i) = W[k + i w] (the reverse kernels' operand): consecutive
// threads take consecutive k (coalesced reads; the stores land 4 banks apart, at most 4 to a
// bank).
__device__ __forceinline__ void load_wt(const float *__restrict__ W, int w, int lw, float *Ws) {
  const int S = row_stride(w);
  for (int e = threadIdx.x; e < w * w; e += kThreads) Ws[(e & (w - 1)) * S + (e >> lw)] = W[e];
}

// The block's partials of ns sums a unit (ns <= NS): each thread's v[u][s] for units u0 + u,
// summed over the ny point rows in a fixed tree (in Zs, which must hold ny w floats), to
// partial[(s w + i) gridDim.x + blockIdx.x].
template <int NS, typename V>
__device__ __forceinline__ void block_sums(const V &v, int w, int tx, int ty, int ny, int ns,
                                           float *Zs, float *__restrict__ partial) {
  const int u0 = 4 * tx;
#pragma unroll // a compile-time bound: v's indices stay static (v stays in registers)
  for (int s = 0; s < NS; ++s) {
    if (s >= ns) break;
    __syncthreads(); // Zs free (the last tile's products, the previous sum's reads)
#pragma unroll
    for (int u = 0; u < 4; ++u) Zs[ty * w + u0 + u] = sum_of(v, u, s);
    for (int h = ny / 2; h > 0; h /= 2) {
      __syncthreads();
      if (ty < h)
#pragma unroll
        for (int u = 0; u < 4; ++u) Zs[ty * w + u0 + u] += Zs[(ty + h) * w + u0 + u];
    }
    __syncthreads();
    for (int i = threadIdx.x; i < w; i += kThreads)
      partial[((size_t)s * w + i) * gridDim.x + blockIdx.x] = Zs[i];
  }
}

// The output layer (one output) computed in the last hidden layer's epilogue: U = W_out Z + b_out
// on every channel (the bias on the value channel alone), so that neither Z nor a product
// reading it is needed. U null: none.
struct fwd_out {
  const float *W, *b; // W_out (1 x w), b_out
  float *U;           // K x npts (kernels/net.h's output layout for one output)
};

// Forward: A = W Zin (without the bias), written; Z = s(A + b) by the chain rule where Z is
// not null; U where out.U is not null. Zin is layer l - 1's Z, or with bin its pre-activation
// A (Z formed as the tile is staged, bias bin). W column-major w x w (W(i, k) at W[i + k w]).
template <int ACT, int ND1, int ND2, int LAP>
__global__ void __launch_bounds__(kThreads)
    layer_fwd(int w, int npts, const float *__restrict__ W, const float *__restrict__ b,
              const float *__restrict__ Zin, const float *__restrict__ bin, float *__restrict__ A,
              float *__restrict__ Z, fwd_out out) {
  constexpr int K = chans<ND1, ND2, LAP>::K;
  TSR_NET_LAYER_SMEM;
  const auto [lw, S, tx, ty, ny, u0, P, tiles] = block_geom(w, npts);
  float *Ws = reinterpret_cast<float *>(smem4), *Zs = Ws + w * S;
  for (int e = threadIdx.x; e < w * w; e += kThreads) // Ws[k S + i] = W(i, k)
    Ws[(e >> lw) * S + (e & (w - 1))] = W[e];
  float bu[4], bq[4], wo[4];
  const int kq = (threadIdx.x << 2) & (w - 1); // the units this thread stages (load_tile_act)
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    bu[u] = b[u0 + u];
    bq[u] = bin ? bin[kq + u] : 0.0f;
    wo[u] = out.U ? out.W[u0 + u] : 0.0f;
  }
  const float bo = out.U ? out.b[0] : 0.0f;
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int p0 = t * P;
    float acc[K][kPts][4];
    __syncthreads(); // the previous tile's products are done with Zs
    if (bin)
      load_tile_act<ACT, ND1, ND2, LAP>(Zin, bq, w, lw, npts, p0, P, Zs);
    else
      load_tile<K>(Zin, w, lw, npts, p0, P, Zs);
    __syncthreads();
    product<K>(Ws, Zs, w, u0, ty, ny, acc);
#pragma unroll
    for (int pp = 0; pp < kPts; ++pp) {
      const int p = p0 + ty + ny * pp;
      const bool in = p < npts;
      if (in)
#pragma unroll
        for (int c = 0; c < K; ++c) st4(A + (size_t)u0 + (size_t)w * ((size_t)c * npts + p), acc[c][pp]);
      if (!Z && !out.U) continue;
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
      if (Z && in)
#pragma unroll
        for (int c = 0; c < K; ++c) st4(Z + (size_t)u0 + (size_t)w * ((size_t)c * npts + p), zo[c]);
      if (out.U)
#pragma unroll
        for (int c = 0; c < K; ++c) {
          // the thread's 4 units, then the w / 4 threads of the point (adjacent lanes of one
          // warp) in a fixed butterfly: every lane of a point ends with the same sum
          float v = wo[0] * zo[c][0];
          v = fmaf(wo[1], zo[c][1], v);
          v = fmaf(wo[2], zo[c][2], v);
          v = fmaf(wo[3], zo[c][3], v);
          for (int m = (w >> 3); m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
          if (tx == 0 && in) out.U[(size_t)c * npts + p] = c == 0 ? v + bo : v;
        }
    }
  }
}

// The last hidden layer's reverse from the output layer's (one output), formed as layer
// L - 1's reverse stages its input tile: g_c = W_out(u) dU(c, p), then the chain rule's reverse
// at A + b (what tsr_net_cuda_out_bwd writes), stored to G too (the weight gradient's
// operand), with each thread's per-unit sums of its value channel (the bias gradient) and of
// dU . Z (W_out's gradient; Z = s(A + b) by chain_fwd). dU null: none.
struct bwd_out {
  const float *Wout, *dU, *A, *b; // W_out (1 x w), dU (K x npts), layer L - 1's A and bias
  float *G;                       // dL/dA of layer L - 1, written
};
template <int ACT, int ND1, int ND2, int LAP>
__device__ __forceinline__ void load_tile_out(const bwd_out &o, const float (&wq)[4],
                                              const float (&bq)[4], int w, int lw, int npts,
                                              int p0, int P, float *Gs, float (&so)[4][5]) {
  constexpr int K = chans<ND1, ND2, LAP>::K;
  const int S = row_stride(w), n4 = (w * P) >> 2;
  for (int e = threadIdx.x; e < n4; e += kThreads) {
    const int k = (e << 2) & (w - 1), q = (e << 2) >> lw, p = p0 + q;
    float4 v[K];
    if (p < npts) {
      float du[K];
#pragma unroll
      for (int c = 0; c < K; ++c) {
        v[c] = ld4(o.A + (size_t)w * ((size_t)c * npts + p) + k);
        du[c] = o.dU[(size_t)c * npts + p];
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        float a[K], z[K], g[K], zs = 0.0f;
#pragma unroll
        for (int c = 0; c < K; ++c) {
          a[c] = lane4(v[c], u);
          g[c] = wq[u] * du[c];
        }
        chain_fwd<ACT, ND1, ND2, LAP>(bq[u], a, z);
#pragma unroll
        for (int c = 0; c < K; ++c) zs = fmaf(du[c], z[c], zs);
        chain_bwd<ACT, ND1, ND2, LAP>(bq[u], a, g);
        so[u][0] += g[0];
        so[u][1] += zs;
#pragma unroll
        for (int c = 0; c < K; ++c) lane4(v[c], u) = g[c];
      }
#pragma unroll
      for (int c = 0; c < K; ++c)
        *reinterpret_cast<float4 *>(o.G + (size_t)w * ((size_t)c * npts + p) + k) = v[c];
    } else {
#pragma unroll
      for (int c = 0; c < K; ++c) v[c] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
#pragma unroll
    for (int c = 0; c < K; ++c) *reinterpret_cast<float4 *>(Gs + (c * P + q) * S + k) = v[c];
  }
}

// Reverse: G = W^T dA (the dL/dZ of the layer below), then dA_prev = its chain rule's reverse
// at A_prev + b_prev; the block's sums of dA_prev's value channel per unit to
// partial[i * gridDim.x + blockIdx.x]. With out.dU, dA is not read but formed from the output
// layer's (load_tile_out), and the block's sums of layer L - 1's bias and W_out gradients go to
// partial[((1 + s) w + i) gridDim.x + blockIdx.x], s = 0, 1.
// OUT: the last hidden layer's variant (out.dU set), a kernel of its own so that the others
// keep their registers; two blocks a multiprocessor (at 85 KB each), which the register
// allocation must allow (it took 144-160 registers unbounded).
template <int ACT, int ND1, int ND2, int LAP, int OUT>
__global__ void __launch_bounds__(kThreads, 2)
    layer_bwd(int w, int npts, const float *__restrict__ W, const float *__restrict__ bprev,
              const float *__restrict__ dA, const float *__restrict__ Aprev,
              float *__restrict__ dAprev, float *__restrict__ partial, bwd_out out) {
  constexpr int K = chans<ND1, ND2, LAP>::K;
  TSR_NET_LAYER_SMEM;
  const auto [lw, S, tx, ty, ny, u0, P, tiles] = block_geom(w, npts);
  float *Ws = reinterpret_cast<float *>(smem4), *Zs = Ws + w * S;
  load_wt(W, w, lw, Ws);
  float bu[4], sum[4] = {0.0f, 0.0f, 0.0f, 0.0f}, wq[4], bq[4], so[4][5];
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    bu[u] = bprev[u0 + u];
    // the units this thread stages are u0's too (4 kThreads is a multiple of w)
    wq[u] = OUT ? out.Wout[u0 + u] : 0.0f;
    bq[u] = OUT ? out.b[u0 + u] : 0.0f;
    so[u][0] = so[u][1] = 0.0f;
  }
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int p0 = t * P;
    float acc[K][kPts][4];
    if (OUT) {
      __syncthreads(); // the previous tile's products are done with Zs
      load_tile_out<ACT, ND1, ND2, LAP>(out, wq, bq, w, lw, npts, p0, P, Zs, so);
      __syncthreads();
      product<K>(Ws, Zs, w, u0, ty, ny, acc);
    } else {
      tile_product<K>(dA, w, lw, npts, p0, Ws, Zs, u0, ty, ny, acc);
    }
#pragma unroll
    for (int pp = 0; pp < kPts; ++pp) {
      const int p = p0 + ty + ny * pp;
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
  block_sums<1>(sum, w, tx, ty, ny, 1, Zs, partial);
  if (OUT) block_sums<5>(so, w, tx, ty, ny, 2, Zs, partial + (size_t)w * gridDim.x);
}

// Layer 1 in reverse into layer 0: G = W_1^T dA_1 (dL/dZ_0), then layer 0's chain rule in
// reverse at A0 (its value channel; the first-derivative channels are W0(i, j) in_scale[j],
// the second-derivative ones 0) and the block's sums per unit of layer 0's parameter
// gradients: sum 0 the bias (dA0), sum 1 + j the weight column j (dA0 xhat_j, plus
// in_scale[j] dA_j for a first-derivative input), to partial[(s w + i) gridDim.x + blockIdx.x]
// as kernels/net.cu's layer0_bwd writes them. theta0: W0 (w x nin, column-major) then b0.
struct in_map {
  float scale[4], shift[4]; // xhat_j = scale[j] x_j + shift[j]
};
#ifndef TSR_NET_L1_MINB
#define TSR_NET_L1_MINB 2 // blocks an SM (registers: 167 at 1, 128 at 2 with spills)
#endif
template <int ACT, int ND1, int ND2, int LAP>
__global__ void __launch_bounds__(kThreads, TSR_NET_L1_MINB)
    layer1_bwd(int w, int npts, int nin, const float *__restrict__ W, const float *__restrict__ theta0,
               const float *__restrict__ X, in_map xm, const float *__restrict__ dA,
               const float *__restrict__ A0, float *__restrict__ partial) {
  constexpr int K = chans<ND1, ND2, LAP>::K;
  TSR_NET_LAYER_SMEM;
  const auto [lw, S, tx, ty, ny, u0, P, tiles] = block_geom(w, npts);
  float *Ws = reinterpret_cast<float *>(smem4), *Zs = Ws + w * S;
  load_wt(W, w, lw, Ws);
  // per unit: the bias, W0(i, j) in_scale[j] (the first-derivative channels of A0)
  float bu[4], aj[4][4], sum[4][5];
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    bu[u] = theta0[(size_t)w * nin + u0 + u];
#pragma unroll
    for (int j = 0; j < 4; ++j) aj[u][j] = j < nin ? theta0[u0 + u + (size_t)j * w] * xm.scale[j] : 0.0f;
#pragma unroll
    for (int k = 0; k < 5; ++k) sum[u][k] = 0.0f;
  }
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int p0 = t * P;
    float acc[K][kPts][4];
    tile_product<K>(dA, w, lw, npts, p0, Ws, Zs, u0, ty, ny, acc);
#pragma unroll
    for (int pp = 0; pp < kPts; ++pp) {
      const int p = p0 + ty + ny * pp;
      if (p >= npts) continue;
      const float4 a4 = ld4(A0 + (size_t)u0 + (size_t)w * p);
      float xhat[4];
#pragma unroll
      for (int j = 0; j < 4; ++j)
        xhat[j] = j < nin ? xm.scale[j] * X[j + (size_t)nin * p] + xm.shift[j] : 0.0f;
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const float a0 = (u == 0 ? a4.x : u == 1 ? a4.y : u == 2 ? a4.z : a4.w) + bu[u];
        const float y = tsr_net_act_value_f(ACT, a0);
        float s1, s2, s3;
        tsr_net_act_derivs_f(ACT, a0, y, &s1, &s2, &s3);
        float da0 = acc[0][pp][u] * s1, daj[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int j = 0; j < ND1; ++j) {
          const float dyj = acc[1 + j][pp][u];
          da0 += dyj * s2 * aj[u][j];
          daj[j] = dyj * s1;
        }
        if (LAP && ND2 > 0) {
          const float gl = acc[K - 1][pp][u];
          float q = 0.0f;
#pragma unroll
          for (int j = 0; j < ND2; ++j) {
            q += aj[u][j] * aj[u][j];
            daj[j] += gl * 2.0f * s2 * aj[u][j];
          }
          da0 += gl * (s3 * q);
        }
        sum[u][0] += da0;
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (j < nin) sum[u][1 + j] += j < ND1 ? da0 * xhat[j] + xm.scale[j] * daj[j] : da0 * xhat[j];
      }
    }
  }
  block_sums<5>(sum, w, tx, ty, ny, 1 + nin, Zs, partial);
}

// The weight gradient of a hidden layer l >= 1: dW = dA Zprev^T over every channel and point
// (w x w, dW(i, k) at i + k w as W), as the blocks' partials partial[(i + k w) gridDim.x +
// blockIdx.x] (summed by tsr_net_cuda_finish_nb in a fixed order). Zprev: Z_0 as stored (bin
// null), or s(A_(l-1) + bin) formed as the tile is staged (load_tile_act), so that the layers
// path never stores Z. A block stages PW points of dA and Zprev (K PW rows of w, as
// load_tile); each thread keeps an 8 x 8 block of dW in registers (4 float4 loads for 64 FMA
// a row) over all its tiles. (w / 8)^2 threads cover dW; the block's other threads are
// further subsets of the rows (subset s: rows s, s + split, ...), added to subset 0 in order
// at the end through shared memory. Widths from 8.
#ifndef TSR_NET_WGRAD_PTS
#define TSR_NET_WGRAD_PTS 16 // points a tile
#endif
__host__ __device__ inline int wgrad_points(int) { return TSR_NET_WGRAD_PTS; }
inline size_t wgrad_smem_bytes(int w, int K) {
  const size_t tiles = 2 * (size_t)K * wgrad_points(w) * row_stride(w);
  const size_t sums = (size_t)(w / 8) * (w / 8) * 64; // one subset's dW, for the final sums
  return sizeof(float) * (tiles > sums ? tiles : sums);
}

template <int ACT, int ND1, int ND2, int LAP>
__global__ void __launch_bounds__(kThreads, 2)
    layer_wgrad(int w, int npts, const float *__restrict__ dA, const float *__restrict__ Zin,
                const float *__restrict__ bin, float *__restrict__ partial) {
  constexpr int K = chans<ND1, ND2, LAP>::K;
  TSR_NET_LAYER_SMEM;
  const int lw = log2w(w), S = row_stride(w), PW = wgrad_points(w), rows = K * PW;
  const int nx = w >> 3, l8 = lw - 3, nq = nx * nx, split = kThreads / nq;
  const int qd = threadIdx.x & (nq - 1), sub = threadIdx.x >> (2 * l8);
  const int i0 = (qd & (nx - 1)) << 3, k0 = (qd >> l8) << 3;
  float *Gs = reinterpret_cast<float *>(smem4), *Zs = Gs + rows * S;
  float bq[4];
  const int kq = (threadIdx.x << 2) & (w - 1);
#pragma unroll
  for (int u = 0; u < 4; ++u) bq[u] = bin ? bin[kq + u] : 0.0f;
  float acc[8][8];
#pragma unroll
  for (int a = 0; a < 8; ++a)
#pragma unroll
    for (int c = 0; c < 8; ++c) acc[a][c] = 0.0f;
  const int tiles = (npts + PW - 1) / PW;
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int p0 = t * PW;
    __syncthreads(); // the previous tile's sums are done with Gs and Zs
    load_tile<K>(dA, w, lw, npts, p0, PW, Gs);
    if (bin)
      load_tile_act<ACT, ND1, ND2, LAP>(Zin, bq, w, lw, npts, p0, PW, Zs);
    else
      load_tile<K>(Zin, w, lw, npts, p0, PW, Zs);
    __syncthreads();
    for (int row = sub; row < rows; row += split) {
      const float *g = Gs + row * S + i0, *z = Zs + row * S + k0;
      const float4 g0 = ld4(g), g1 = ld4(g + 4), z0 = ld4(z), z1 = ld4(z + 4);
      const float gv[8] = {g0.x, g0.y, g0.z, g0.w, g1.x, g1.y, g1.z, g1.w};
      const float zv[8] = {z0.x, z0.y, z0.z, z0.w, z1.x, z1.y, z1.z, z1.w};
#pragma unroll
      for (int a = 0; a < 8; ++a)
#pragma unroll
        for (int c = 0; c < 8; ++c) acc[a][c] = fmaf(gv[a], zv[c], acc[a][c]);
    }
  }
  // subsets 1, 2, ... into subset 0, in order (slot j of quad qd at Gs[j nq + qd])
  for (int sb = 1; sb < split; ++sb) {
    __syncthreads();
    if (sub == sb)
#pragma unroll
      for (int a = 0; a < 8; ++a)
#pragma unroll
        for (int c = 0; c < 8; ++c) Gs[(8 * a + c) * nq + qd] = acc[a][c];
    __syncthreads();
    if (sub == 0)
#pragma unroll
      for (int a = 0; a < 8; ++a)
#pragma unroll
        for (int c = 0; c < 8; ++c) acc[a][c] += Gs[(8 * a + c) * nq + qd];
  }
  if (sub == 0)
#pragma unroll
    for (int a = 0; a < 8; ++a)
#pragma unroll
      for (int c = 0; c < 8; ++c)
        partial[((size_t)(i0 + a) + (size_t)w * (k0 + c)) * gridDim.x + blockIdx.x] = acc[a][c];
}

// Blocks of a weight gradient over npts points: one a tile, at most kMaxBlocks (a constant,
// for the bits).
#ifndef TSR_NET_WGRAD_BLOCKS
#define TSR_NET_WGRAD_BLOCKS kMaxBlocks
#endif
__host__ __device__ inline int wgrad_blocks(int w, int npts) {
  const int PW = wgrad_points(w), tiles = (npts + PW - 1) / PW, most = TSR_NET_WGRAD_BLOCKS;
  return tiles < most ? (tiles > 0 ? tiles : 1) : most;
}

// Blocks of a launch over npts points: one a tile, at most kMaxBlocks.
__host__ __device__ inline int layer_blocks(int w, int npts) {
  const int P = tile_points(w), tiles = (npts + P - 1) / P;
  return tiles < kMaxBlocks ? (tiles > 0 ? tiles : 1) : kMaxBlocks;
}

} // namespace

#endif
