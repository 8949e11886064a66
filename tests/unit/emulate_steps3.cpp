/* The 3D time-tile kernel (steps3_kernel, kernels/steps3_cuda.cuh) run on the CPU, bit for
 * bit against tsr_steps_host: one OS thread per CUDA thread, a block at a time, the barriers a
 * std::barrier, shared memory a global array filled with garbage before each block. This checks
 * the kernel's indexing, pipeline, ghost refills and skipped work without a GPU (the arithmetic
 * is the host compiler's, so only the GPU test, tests/gpu/test_steps_gpu.c, checks the device's
 * bits). Built as C++ with the CUDA keywords defined away; any launch shape the TSR_STEPS3_*
 * macros give can be checked by rebuilding with them (CXXFLAGS). Exits non-zero on a
 * difference. */
#include <atomic>
#include <barrier>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>
extern "C" {
#include "kernels/steps.h"
}
struct uint3e { unsigned x, y, z; };
thread_local uint3e threadIdx, blockIdx;
static std::barrier<> *g_bar; /* the block in flight's */
static std::atomic<int> g_or{0};
static void __syncthreads() { g_bar->arrive_and_wait(); }
static int __syncthreads_or(int v) {
  if (v) g_or.fetch_or(1);
  g_bar->arrive_and_wait();
  int r = g_or.load();
  g_bar->arrive_and_wait();
  return r;
}
template <typename T> static T __ldg(const T *p) { return *p; }
/* the CUDA keywords (cuda_runtime_api.h defines them where TSR_HAVE_CUDA brings it in) */
#undef __global__
#undef __device__
#undef __forceinline__
#undef __shared__
#undef __launch_bounds__
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__
#define __launch_bounds__(...)
template <int R> constexpr int slot(int k) { return ((R + k) % 3 + 3) % 3; }
#include "kernels/steps3_cuda.cuh"
double steps3_smem[(240 << 10) / 8];

template <int M, int NC, int MS, bool SRC, typename T>
static void launch(const steps3_args<T> &a, const int g[3]) {
  std::barrier<> bar(k3Threads);
  g_bar = &bar;
  for (int bz = 0; bz < g[2]; ++bz)
    for (int by = 0; by < g[1]; ++by)
      for (int bx = 0; bx < g[0]; ++bx) {
        g_or = 0;
        memset(steps3_smem, 0xff, sizeof steps3_smem);  // garbage, like fresh shared memory
        std::vector<std::thread> th;
        for (int ty = 0; ty < k3BY; ++ty)
          for (int tx = 0; tx < 32; ++tx)
            th.emplace_back([&, tx, ty, bx, by, bz] {
              threadIdx = {(unsigned)tx, (unsigned)ty, 0};
              blockIdx = {(unsigned)bx, (unsigned)by, (unsigned)bz};
              steps3_kernel<M, NC, MS, SRC, T>(a);
            });
        for (auto &t : th) t.join();
      }
}

static uint64_t rng = 0x243f6a8885a308d3ull;
static double uni() { rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
  return (double)((rng * 0x2545f4914f6cdd1dull) >> 11) * (1.0 / 9007199254740992.0); }

template <int M, int NC, int MS, bool SRC, typename T>
static int run(tsr_box box, int faces, int grow) {
  const int model = M, ncomp = NC, ghost = 7, dim = 3, m = MS;
  tsr_prec prec = sizeof(T) == 4 ? TSR_PREC_SINGLE : TSR_PREC_DOUBLE;
  tsr_field *in, *sr, *ho, *go;
  tsr_field_create_as(dim, &box, ghost, ncomp, TSR_MEM_HOST, prec, &in);
  tsr_field_create_as(dim, &box, ghost, ncomp, TSR_MEM_HOST, prec, &sr);
  tsr_field_create_as(dim, &box, ghost, ncomp, TSR_MEM_HOST, prec, &ho);
  tsr_field_create_as(dim, &box, ghost, ncomp, TSR_MEM_HOST, prec, &go);
  size_t n = (size_t)ncomp * in->scomp;
  for (size_t i = 0; i < n; ++i) { tsr_field_set(in, i, 0.5 + uni()); tsr_field_set(sr, i, 0.1 * (uni() - 0.5)); tsr_field_set(ho, i, -7); tsr_field_set(go, i, -7); }
  tsr_box rg = box;
  for (int f = 0; f < 6; ++f) if (!(faces >> f & 1)) { if (f % 2 == 0) rg.lo[f / 2] -= grow; else rg.hi[f / 2] += grow; }
  tsr_steps_bc bc = {0};
  for (int f = 0; f < 6; ++f) {
    if (!(faces >> f & 1)) continue;
    tsr_bc_face *fc = &bc.face[bc.nface];
    fc->axis = f / 2; fc->side = f % 2; fc->type = f % 2 ? TSR_GHOST_NEUMANN : TSR_GHOST_DIRICHLET;
    fc->t1 = (fc->axis + 1) % 3; fc->t2 = (fc->axis + 2) % 3;
    int *o[2] = {&fc->o1, &fc->o2}, *nn[2] = {&fc->n1, &fc->n2};
    for (int k = 0; k < 2; ++k) {
      int t = k ? fc->t2 : fc->t1, lo = box.lo[t], hi = box.hi[t];
      if (!(faces >> (2 * t) & 1)) lo -= ghost - 1;
      if (!(faces >> (2 * t + 1) & 1)) hi += ghost - 1;
      *o[k] = lo - box.lo[t]; *nn[k] = hi - lo;
    }
    fc->layers = 1; fc->h = 0.05 + 0.01 * f;
    size_t nv = (size_t)ncomp * fc->n1 * fc->n2;
    double *v = (double *)malloc(nv * 8);
    for (size_t i = 0; i < nv; ++i) v[i] = uni() - 0.25;
    bc.val[bc.nface++] = v;
  }
  double p[TSR_MAX_MODEL_PARAMS];
  const tsr_model_info *mi = &tsr_models[model];
  for (int i = 0; i < mi->nparam; ++i) p[i] = mi->param[i].def;
  const double h[3] = {0.11, 0.13, 0.17};
  tsr_stage_desc d = {model, ncomp, TSR_STAGE_EULER, 0.0017, {0}};
  tsr_stage_coef_init(&d.coef, model, p, h, in);
  tsr_steps_host(&d, m, 1, &rg, &bc, in, SRC ? sr : NULL, ho);
  steps3_args<T> a;
  steps3_fill(&a, &d, &rg, &bc, in, SRC ? sr : NULL, go);
  int g[3];
  steps3_grid(&rg, m, g);
  launch<M, NC, MS, SRC, T>(a, g);
  size_t bytes = tsr_field_bytes(in), es = sizeof(T), bad = 0; long first = -1;
  for (size_t i = 0; i < bytes / es; ++i)
    if (memcmp((char *)ho->data + i * es, (char *)go->data + i * es, es)) { if (first < 0) first = i; bad++; }
  printf("%s %s m %d src %d box %dx%dx%d faces 0x%x grow %d grid %dx%dx%d: %zu differ (first %ld: emu %.17g host %.17g)\n",
         mi->name, es == 4 ? "fp32" : "fp64", m, (int)SRC, tsr_box_len(&box, 0), tsr_box_len(&box, 1), tsr_box_len(&box, 2),
         faces, grow, g[0], g[1], g[2], bad, first, first >= 0 ? tsr_field_get(go, first) : 0.0, first >= 0 ? tsr_field_get(ho, first) : 0.0);
  return bad != 0;
}

int main() {
  int fails = 0;
  tsr_box b1 = {{-3, 5, 2}, {-3 + 70, 5 + 23, 2 + 71}};
  tsr_box b2 = {{1, -2, 0}, {3, 15, 9}};
  tsr_box b3 = {{7, 1, 1}, {7 + 33, 1 + 19, 3}};
  fails += run<TSR_MODEL_HEAT, 1, 3, false, double>(b1, 0x3f, 0);
  fails += run<TSR_MODEL_HEAT, 1, 3, true, double>(b1, 0x0, 2);
  fails += run<TSR_MODEL_HEAT, 1, 3, false, double>(b1, 0x15, 2);
  fails += run<TSR_MODEL_WAVE, 2, 3, true, float>(b1, 0x22, 2);
  fails += run<TSR_MODEL_GRAY_SCOTT, 2, 5, false, double>(b2, 0x30, 2);
  fails += run<TSR_MODEL_ADVECTION_DIFFUSION, 1, 5, true, float>(b3, 0x0d, 0);
  fails += run<TSR_MODEL_HEAT, 1, 3, false, double>(b3, 0x3f, 0);
  /* one component, a source, m 5, z faces: the planes without the tests between them */
  fails += run<TSR_MODEL_ADVECTION_DIFFUSION, 1, 5, true, float>(b1, 0x3c, 1);
  printf("%d failed\n", fails);
  return fails != 0;
}
