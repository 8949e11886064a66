/* The layers path's kernels (layer_fwd, layer_bwd: kernels/net_layer.cuh) run on the CPU
 * against a plain double-precision evaluation of what they compute: one OS thread per CUDA
 * thread, a block at a time, the barriers a std::barrier, shared memory a global array filled
 * with garbage before each block. For networks of several widths and channel sets (values
 * alone; the Laplacian mode's 2-D, 1-D + t, 2-D + t, 3-D + t), both activations, a last tile
 * part full, and grids with fewer blocks than tiles (a block walking several tiles), it checks
 *   forward  A = W Zin and Z = s(A + b) by the chain rule, every channel; and from a
 *            pre-activation input (Zin = s(Aprev + bprev) formed as read) with the output
 *            layer in its epilogue, U = Wout Z + bout, no Z stored;
 *   weights  dW = dA Zin^T (layer_wgrad) from Z and from a pre-activation input, the blocks'
 *            partials summed;
 *   reverse  dAprev = the chain rule's reverse at Aprev + bprev applied to W^T dA, and the
 *            blocks' bias partials (their sum over the blocks, per unit),
 *   the last hidden layer's reverse with its dA formed from dU (layer_bwd<.., 1>): dA written,
 *            dAprev, and the blocks' sums of its bias and W_out's gradient;
 *   layer 1 into layer 0 (layer1_bwd): layer 0's reverse applied to W^T dA, to the blocks'
 *            partials of layer 0's bias and weight columns (their sums over the blocks),
 * each within 2e-5 of the largest magnitude of its array (fp32 products of width terms).
 * This checks indexing, tiling, the tile loop and the reductions without a GPU; the device's
 * own arithmetic is test_net_gpu's (TSR_NET_FUSED=2). Exits non-zero on a difference. */
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

struct float4 {
  float x, y, z, w;
};
struct float2 {
  float x, y;
};
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
struct uint3e {
  unsigned x, y, z;
};
thread_local uint3e threadIdx, blockIdx;
static uint3e gridDim;
static std::barrier<> *g_bar; /* the block in flight's */
static void __syncthreads() { g_bar->arrive_and_wait(); }
/* a warp's shuffle: its 32 threads meet at their warp's barrier, read, and meet again */
static std::barrier<> *g_wbar[256 / 32];
static float g_shfl[256];
static float __shfl_xor_sync(unsigned, float v, int m) {
  const unsigned t = threadIdx.x;
  g_shfl[t] = v;
  g_wbar[t >> 5]->arrive_and_wait();
  const float r = g_shfl[t ^ (unsigned)m];
  g_wbar[t >> 5]->arrive_and_wait();
  return r;
}
#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __shared__
#undef __launch_bounds__
#undef __restrict__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__
alignas(16) static float4 g_smem[(200 << 10) / 16];
#define TSR_NET_LAYER_SMEM float4 *smem4 = g_smem
#include "kernels/net_layer.cuh"

static int g_fails;
static unsigned long long g_rng = 0x2545f4914f6cdd1dull;
static double uniform() { /* [-1, 1) */
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (double)(g_rng >> 11) * 0x1.0p-52 - 1.0;
}

/* fn() on every thread of every block of a grid of `blocks`, a block at a time. */
template <typename F>
static void launch(int blocks, F fn) {
  gridDim = {(unsigned)blocks, 1, 1};
  for (int b = 0; b < blocks; ++b) {
    memset(g_smem, 0xff, sizeof g_smem); /* garbage, like fresh shared memory */
    std::barrier<> bar(kThreads);
    g_bar = &bar;
    std::vector<std::unique_ptr<std::barrier<>>> wb;
    for (int k = 0; k < kThreads / 32; ++k) {
      wb.emplace_back(new std::barrier<>(32));
      g_wbar[k] = wb.back().get();
    }
    std::vector<std::thread> th;
    for (int t = 0; t < kThreads; ++t)
      th.emplace_back([=] {
        threadIdx = {(unsigned)t, 0, 0};
        blockIdx = {(unsigned)b, 0, 0};
        fn();
      });
    for (auto &x : th) x.join();
  }
}

/* max |got - want| / max |want| */
static double rel(const std::vector<float> &got, const std::vector<double> &want) {
  double d = 0, m = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    const double e = std::fabs((double)got[k] - want[k]);
    d = e == e && e > d ? e : (e == e ? d : INFINITY);
    m = std::fabs(want[k]) > m ? std::fabs(want[k]) : m;
  }
  return m > 0 ? d / m : d;
}

/* y = s(a) and s', s'', s''' in double, as kernels/net_act.h defines them. */
static void act(int a_, double a, double *y, double *s1, double *s2, double *s3) {
  *y = tsr_net_act_value_d(a_, a);
  tsr_net_act_derivs_d(a_, a, *y, s1, s2, s3);
}

template <int ACT, int ND1, int ND2, int LAP>
static void run(int w, int npts, int blocks, const char *what) {
  constexpr int K = chans<ND1, ND2, LAP>::K;
  const size_t plane = (size_t)w * npts, n = K * plane;
  std::vector<float> W(w * w), b(w), bp(w), Zin(n), dA(n), Ap(n);
  for (auto &v : W) v = (float)(uniform() / std::sqrt((double)w));
  for (auto &v : b) v = (float)(0.3 * uniform());
  for (auto &v : bp) v = (float)(0.3 * uniform());
  for (auto &v : Zin) v = (float)uniform();
  for (auto &v : dA) v = (float)uniform();
  for (auto &v : Ap) v = (float)(1.5 * uniform());
  std::vector<float> A(n, NAN), Z(n, NAN), dAp(n, NAN), partial((size_t)w * blocks, NAN);
  launch(blocks, [&] {
    layer_fwd<ACT, ND1, ND2, LAP>(w, npts, W.data(), b.data(), Zin.data(), nullptr, A.data(),
                                  Z.data(), fwd_out{nullptr, nullptr, nullptr});
  });
  launch(blocks, [&] {
    layer_bwd<ACT, ND1, ND2, LAP, 0>(w, npts, W.data(), bp.data(), dA.data(), Ap.data(),
                                     dAp.data(), partial.data(), bwd_out{});
  });

  /* the reference, in double */
  std::vector<double> Ar(n), Zr(n), Gr(n), dApr(n), bsum(w, 0.0), bgot(w, 0.0);
  auto at = [&](int i, int c, int p) { return (size_t)i + (size_t)w * ((size_t)c * npts + p); };
  for (int c = 0; c < K; ++c)
    for (int p = 0; p < npts; ++p)
      for (int i = 0; i < w; ++i) {
        double a = 0, g = 0;
        for (int k = 0; k < w; ++k) {
          a += (double)W[i + k * w] * Zin[at(k, c, p)];
          g += (double)W[k + i * w] * dA[at(k, c, p)];
        }
        Ar[at(i, c, p)] = a;
        Gr[at(i, c, p)] = g;
      }
  for (int p = 0; p < npts; ++p)
    for (int i = 0; i < w; ++i) {
      double y, s1, s2, s3, q = 0;
      act(ACT, Ar[at(i, 0, p)] + b[i], &y, &s1, &s2, &s3);
      Zr[at(i, 0, p)] = y;
      for (int j = 0; j < ND1; ++j) Zr[at(i, 1 + j, p)] = s1 * Ar[at(i, 1 + j, p)];
      for (int j = 0; j < ND2; ++j) q += Ar[at(i, 1 + j, p)] * Ar[at(i, 1 + j, p)];
      if (K > 1 + ND1) Zr[at(i, 1 + ND1, p)] = s2 * q + s1 * Ar[at(i, 1 + ND1, p)];
      /* the reverse at Aprev + bprev */
      double a[8], g[8];
      for (int c = 0; c < K; ++c) a[c] = Ap[at(i, c, p)], g[c] = Gr[at(i, c, p)];
      act(ACT, a[0] + bp[i], &y, &s1, &s2, &s3);
      double da0 = g[0] * s1, aq = 0;
      for (int j = 0; j < ND1; ++j) da0 += g[1 + j] * s2 * a[1 + j];
      for (int j = 0; j < ND2; ++j) aq += a[1 + j] * a[1 + j];
      double d[8];
      for (int j = 0; j < ND1; ++j) d[j] = g[1 + j] * s1;
      if (K > 1 + ND1) {
        const double gl = g[1 + ND1];
        da0 += gl * (s3 * aq + s2 * a[1 + ND1]);
        for (int j = 0; j < ND2; ++j) d[j] += gl * 2 * s2 * a[1 + j];
        dApr[at(i, 1 + ND1, p)] = gl * s1;
      }
      for (int j = 0; j < ND1; ++j) dApr[at(i, 1 + j, p)] = d[j];
      dApr[at(i, 0, p)] = da0;
      bsum[i] += da0;
    }
  for (int i = 0; i < w; ++i)
    for (int k = 0; k < blocks; ++k) bgot[i] += partial[(size_t)i * blocks + k];
  std::vector<float> bg(bgot.begin(), bgot.end());

  /* layer 1 into layer 0 (layer1_bwd): W^T dA as above, then layer 0's reverse at A0 with
   * nin inputs, to the 1 + nin sums a unit of layer 0's parameter gradients */
  const int nin = ND1 > 0 ? ND1 : 2;
  std::vector<float> th0((size_t)w * nin + w), X((size_t)nin * npts), A0((size_t)w * npts);
  in_map xm;
  for (int j = 0; j < 4; ++j) xm.scale[j] = (float)(1.0 + 0.5 * uniform()), xm.shift[j] = (float)(0.3 * uniform());
  for (auto &v : th0) v = (float)uniform();
  for (auto &v : X) v = (float)uniform();
  for (auto &v : A0) v = (float)(1.5 * uniform());
  std::vector<float> part0((size_t)(1 + nin) * w * blocks, NAN);
  launch(blocks, [&] {
    layer1_bwd<ACT, ND1, ND2, LAP>(w, npts, nin, W.data(), th0.data(), X.data(), xm, dA.data(),
                                   A0.data(), part0.data());
  });
  std::vector<double> s0((size_t)(1 + nin) * w, 0.0), got0((size_t)(1 + nin) * w, 0.0);
  for (int p = 0; p < npts; ++p)
    for (int i = 0; i < w; ++i) {
      double y, s1, s2, s3, aj[4], daj[4] = {0, 0, 0, 0}, q = 0;
      for (int j = 0; j < nin; ++j) aj[j] = (double)th0[i + (size_t)j * w] * xm.scale[j];
      act(ACT, (double)A0[i + (size_t)w * p] + th0[(size_t)w * nin + i], &y, &s1, &s2, &s3);
      double da0 = Gr[at(i, 0, p)] * s1;
      for (int j = 0; j < ND1; ++j) {
        da0 += Gr[at(i, 1 + j, p)] * s2 * aj[j];
        daj[j] = Gr[at(i, 1 + j, p)] * s1;
      }
      if (K > 1 + ND1) {
        const double gl = Gr[at(i, 1 + ND1, p)];
        for (int j = 0; j < ND2; ++j) q += aj[j] * aj[j], daj[j] += gl * 2 * s2 * aj[j];
        da0 += gl * s3 * q;
      }
      s0[i] += da0;
      for (int j = 0; j < nin; ++j) {
        const double xh = (double)xm.scale[j] * X[j + (size_t)nin * p] + xm.shift[j];
        s0[(size_t)(1 + j) * w + i] += j < ND1 ? da0 * xh + xm.scale[j] * daj[j] : da0 * xh;
      }
    }
  for (size_t r = 0; r < s0.size(); ++r)
    for (int k = 0; k < blocks; ++k) got0[r] += part0[r * blocks + k];
  std::vector<float> g0(got0.begin(), got0.end());

  /* from a pre-activation input (Zp = s(Ap + bp), formed as read) with the output layer:
   * A2 = W Zp, U = Wout s(A2 + b) + bout; no Z stored */
  std::vector<float> Wo(w), bo(1, (float)(0.3 * uniform())), A2(n, NAN), U((size_t)K * npts, NAN);
  for (auto &v : Wo) v = (float)(uniform() / std::sqrt((double)w));
  launch(blocks, [&] {
    layer_fwd<ACT, ND1, ND2, LAP>(w, npts, W.data(), b.data(), Ap.data(), bp.data(), A2.data(),
                                  nullptr, fwd_out{Wo.data(), bo.data(), U.data()});
  });
  std::vector<double> Zp(n), A2r(n), Ur((size_t)K * npts, 0.0);
  auto chain = [&](const std::vector<double> &Ain, const float *bias, std::vector<double> &Zo) {
    for (int p = 0; p < npts; ++p)
      for (int i = 0; i < w; ++i) {
        double y, s1, s2, s3, q = 0;
        act(ACT, Ain[at(i, 0, p)] + bias[i], &y, &s1, &s2, &s3);
        Zo[at(i, 0, p)] = y;
        for (int j = 0; j < ND1; ++j) Zo[at(i, 1 + j, p)] = s1 * Ain[at(i, 1 + j, p)];
        for (int j = 0; j < ND2; ++j) q += Ain[at(i, 1 + j, p)] * Ain[at(i, 1 + j, p)];
        if (K > 1 + ND1) Zo[at(i, 1 + ND1, p)] = s2 * q + s1 * Ain[at(i, 1 + ND1, p)];
      }
  };
  chain(std::vector<double>(Ap.begin(), Ap.end()), bp.data(), Zp);
  for (int c = 0; c < K; ++c)
    for (int p = 0; p < npts; ++p)
      for (int i = 0; i < w; ++i) {
        double a = 0;
        for (int k = 0; k < w; ++k) a += (double)W[i + k * w] * Zp[at(k, c, p)];
        A2r[at(i, c, p)] = a;
      }
  std::vector<double> Z2(n);
  chain(A2r, b.data(), Z2);
  for (int c = 0; c < K; ++c)
    for (int p = 0; p < npts; ++p) {
      double u = c == 0 ? bo[0] : 0.0;
      for (int i = 0; i < w; ++i) u += (double)Wo[i] * Z2[at(i, c, p)];
      Ur[(size_t)c * npts + p] = u;
    }

  /* weight gradients, from Z (Zin) and from a pre-activation input (Ap + bp) */
  const int wb = blocks > wgrad_blocks(w, npts) ? wgrad_blocks(w, npts) : blocks;
  double ew = 0;
  for (int pre = 0; pre < 2; ++pre) {
    std::vector<float> pw((size_t)w * w * wb, NAN);
    launch(wb, [&] {
      layer_wgrad<ACT, ND1, ND2, LAP>(w, npts, dA.data(), pre ? Ap.data() : Zin.data(),
                                      pre ? bp.data() : nullptr, pw.data());
    });
    std::vector<double> dWr((size_t)w * w, 0.0), dWg((size_t)w * w, 0.0);
    for (int k = 0; k < w; ++k)
      for (int i = 0; i < w; ++i) {
        double v = 0;
        for (int c = 0; c < K; ++c)
          for (int p = 0; p < npts; ++p)
            v += (double)dA[at(i, c, p)] * (pre ? Zp[at(k, c, p)] : (double)Zin[at(k, c, p)]);
        dWr[i + (size_t)k * w] = v;
        for (int q = 0; q < wb; ++q) dWg[i + (size_t)k * w] += pw[(i + (size_t)k * w) * wb + q];
      }
    const double e = rel(std::vector<float>(dWg.begin(), dWg.end()), dWr);
    ew = e > ew || e != e ? e : ew;
  }

  /* the last hidden layer's variant: its dA formed from dU (one output) at Aout + bout, written,
   * then the same reverse; sums of layer L - 1's bias and of W_out's gradient */
  std::vector<float> dU1((size_t)K * npts), Aout(n), Gout(n, NAN), dAp2(n, NAN);
  std::vector<float> part2((size_t)3 * w * blocks, NAN);
  for (auto &v : dU1) v = (float)uniform();
  for (auto &v : Aout) v = (float)(1.5 * uniform());
  launch(blocks, [&] {
    layer_bwd<ACT, ND1, ND2, LAP, 1>(w, npts, W.data(), bp.data(), nullptr, Ap.data(), dAp2.data(),
                                     part2.data(),
                                     bwd_out{Wo.data(), dU1.data(), Aout.data(), b.data(), Gout.data()});
  });
  /* the chain rule's reverse in double at a (K channels) + bias, g in place */
  auto rev = [&](const double *a, double bias, double *g) {
    double y, s1, s2, s3, q = 0, d[8];
    act(ACT, a[0] + bias, &y, &s1, &s2, &s3);
    double da0 = g[0] * s1;
    for (int j = 0; j < ND1; ++j) da0 += g[1 + j] * s2 * a[1 + j], d[j] = g[1 + j] * s1;
    for (int j = 0; j < ND2; ++j) q += a[1 + j] * a[1 + j];
    if (K > 1 + ND1) {
      const double gl = g[1 + ND1];
      da0 += gl * (s3 * q + s2 * a[1 + ND1]);
      for (int j = 0; j < ND2; ++j) d[j] += gl * 2 * s2 * a[1 + j];
      g[1 + ND1] = gl * s1;
    }
    for (int j = 0; j < ND1; ++j) g[1 + j] = d[j];
    g[0] = da0;
  };
  std::vector<double> Goutr(n), Zo(n), dAp2r(n), s2r((size_t)2 * w, 0.0), s2g((size_t)2 * w, 0.0);
  chain(std::vector<double>(Aout.begin(), Aout.end()), b.data(), Zo);
  for (int p = 0; p < npts; ++p)
    for (int i = 0; i < w; ++i) {
      double a[8], g[8];
      for (int c = 0; c < K; ++c) {
        a[c] = Aout[at(i, c, p)];
        g[c] = (double)Wo[i] * dU1[(size_t)c * npts + p];
        s2r[(size_t)w + i] += (double)dU1[(size_t)c * npts + p] * Zo[at(i, c, p)];
      }
      rev(a, b[i], g);
      for (int c = 0; c < K; ++c) Goutr[at(i, c, p)] = g[c];
      s2r[i] += g[0];
    }
  for (int p = 0; p < npts; ++p)
    for (int i = 0; i < w; ++i) {
      double a[8], g[8];
      for (int c = 0; c < K; ++c) {
        a[c] = Ap[at(i, c, p)];
        g[c] = 0;
        for (int k = 0; k < w; ++k) g[c] += (double)W[k + i * w] * Goutr[at(k, c, p)];
      }
      rev(a, bp[i], g);
      for (int c = 0; c < K; ++c) dAp2r[at(i, c, p)] = g[c];
    }
  for (size_t r = 0; r < s2r.size(); ++r)
    for (int k = 0; k < blocks; ++k) s2g[r] += part2[((size_t)w + r) * blocks + k];
  const double eo = std::max(std::max(rel(Gout, Goutr), rel(dAp2, dAp2r)),
                             rel(std::vector<float>(s2g.begin(), s2g.end()), s2r));

  const double ea = rel(A, Ar), ez = rel(Z, Zr), eg = rel(dAp, dApr), eb = rel(bg, bsum);
  const double e0 = rel(g0, s0), ea2 = rel(A2, A2r), eu = rel(U, Ur);
  const bool ok = ea <= 2e-5 && ez <= 2e-5 && eg <= 2e-5 && eb <= 2e-5 && e0 <= 2e-5 &&
                  ea2 <= 2e-5 && eu <= 2e-5 && ew <= 2e-5 && eo <= 2e-5;
  printf("%s %-28s width %3d, %4d points, %2d blocks: A %.2g, Z %.2g, dAprev %.2g, bias %.2g, "
         "layer 0 %.2g, A from A %.2g, U %.2g, dW %.2g (%d blocks), from dU %.2g\n",
         ok ? "ok  " : "FAIL", what, w, npts, blocks, ea, ez, eg, eb, e0, ea2, eu, ew, wb, eo);
  g_fails += !ok;
}

int main() {
  run<0, 2, 2, 1>(16, 300, layer_blocks(16, 300), "tanh, 2-D Laplacian");
  run<1, 2, 2, 1>(64, 70, layer_blocks(64, 70), "sin, 2-D Laplacian");
  run<0, 2, 2, 1>(64, 420, 2, "tanh, 2-D, 2 blocks, 7 tiles");
  run<0, 0, 0, 0>(32, 150, layer_blocks(32, 150), "tanh, values alone");
  run<1, 2, 1, 1>(8, 600, layer_blocks(8, 600), "sin, 1-D + t");
  run<0, 3, 2, 1>(32, 97, 1, "tanh, 2-D + t, 1 block");
  run<0, 4, 3, 1>(128, 40, layer_blocks(128, 40), "tanh, 3-D + t");
  run<1, 3, 3, 1>(8, 1000, 3, "sin, 3-D, width 8");
  run<0, 3, 3, 1>(32, 1000, 3, "tanh, 3-D, 3 blocks, 8 tiles");
  printf("emulate_net_layer: %d failed\n", g_fails);
  return g_fails ? 1 : 0;
}
