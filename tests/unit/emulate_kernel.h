/* What the kernel emulators share (tests/unit/emulate_steps2.cpp, emulate_steps3.cpp): a CUDA
 * kernel's threads run on the CPU, one OS thread per CUDA thread and a block at a time, the
 * barriers a std::barrier; the CUDA keywords defined away, but __shared__, which each
 * emulator defines for how its kernel declares its shared memory. C++20. */
#ifndef TSR_TESTS_EMULATE_KERNEL_H
#define TSR_TESTS_EMULATE_KERNEL_H
#include <atomic>
#include <barrier>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <type_traits>
#include <vector>

#include "tests/support/xorshift.h"

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
/* cp.async (cuda_pipeline_primitives.h) as a kernel may rely on it: a thread's copies land
 * when it waits for their group, not before, so a read that does not wait reads what was
 * there (other threads see them after that wait and a barrier) */
struct emu_copy {
  void *dst;
  const void *src;
  size_t n;
};
thread_local std::vector<std::vector<emu_copy>> emu_groups;
thread_local std::vector<emu_copy> emu_open;
static void __pipeline_memcpy_async(void *dst, const void *src, size_t n, size_t = 0) {
  emu_open.push_back({dst, src, n});
}
static void __pipeline_commit() {
  emu_groups.push_back(emu_open);
  emu_open.clear();
}
static void __pipeline_wait_prior(size_t n) {
  while (emu_groups.size() > n) {
    for (const emu_copy &c : emu_groups.front()) memcpy(c.dst, c.src, c.n);
    emu_groups.erase(emu_groups.begin());
  }
}
/* the CUDA keywords (cuda_runtime_api.h defines them where TSR_HAVE_CUDA brings it in) */
#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)

/* Runs kernel() as blocks g[0] x g[1] x g[2] of bx x by threads, a block at a time, calling
 * fresh() before each (to give its shared memory garbage, as a fresh block finds). */
template <class Fresh, class Kernel>
static void emu_launch(const unsigned g[3], unsigned bx, unsigned by, Fresh fresh, Kernel kernel) {
  std::barrier<> bar((std::ptrdiff_t)(bx * by));
  g_bar = &bar;
  for (unsigned bz = 0; bz < g[2]; ++bz)
    for (unsigned byi = 0; byi < g[1]; ++byi)
      for (unsigned bxi = 0; bxi < g[0]; ++bxi) {
        g_or = 0;
        fresh();
        std::vector<std::thread> th;
        for (unsigned ty = 0; ty < by; ++ty)
          for (unsigned tx = 0; tx < bx; ++tx)
            th.emplace_back([&, tx, ty, bxi, byi, bz] {
              threadIdx = {tx, ty, 0};
              blockIdx = {bxi, byi, bz};
              kernel();
            });
        for (auto &t : th) t.join();
      }
}

static uint64_t emu_rng = 0x243f6a8885a308d3ull;
static double uni() { return test_uniform(&emu_rng); }
#endif
