/* The 3D time-tile kernel (steps3_kernel, kernels/steps3_cuda.cuh) run on the CPU, bit for
 * bit against tsr_steps_host: one OS thread per CUDA thread, a block at a time, the barriers a
 * std::barrier, shared memory a global array filled with garbage before each block. This checks
 * the kernel's indexing, pipeline, ghost refills and skipped work without a GPU (the arithmetic
 * is the host compiler's, so only the GPU test, tests/gpu/test_steps_gpu.c, checks the device's
 * bits). Built as C++ with the CUDA keywords defined away; any launch shape the TSR_STEPS3_*
 * macros give can be checked by rebuilding with them (CXXFLAGS). Exits non-zero on a
 * difference. */
extern "C" {
#include "kernels/steps.h"
}
#include "tests/unit/emulate_kernel.h"
#include "tests/unit/emulate_steps.h"
#undef __shared__
#define __shared__ /* the kernel's extern array: the global steps3_smem below */
#include "kernels/steps_ring_cuda.cuh"
#include "kernels/steps3_cuda.cuh"
double steps3_smem[(240 << 10) / 8];

template <int M, int NC, int MS, bool SRC, typename T, int S>
static void launch(const steps3_args<T> &a, const int g[3]) {
  const unsigned gu[3] = {(unsigned)g[0], (unsigned)g[1], (unsigned)g[2]};
  emu_launch(gu, 32, k3BY, [] { memset(steps3_smem, 0xff, sizeof steps3_smem); },
             [&] { steps3_kernel<M, NC, MS, SRC, T, S>(a); });
}

template <int M, int NC, int MS, bool SRC, typename T, int S = 1>
static int run(tsr_box box, int faces, int grow) {
  return emu_steps_case(3, box, M, NC, sizeof(T) == 4, MS / S, S, SRC, faces, grow,
                        [](const tsr_stage_desc *d, const tsr_box *rg, const tsr_steps_bc *bc,
                           tsr_field *in, tsr_field *src, tsr_field *out, int g[3]) {
                          steps3_args<T> a;
                          steps3_fill(&a, d, rg, bc, in, src, out);
                          steps3_grid(rg, MS, g);
                          launch<M, NC, MS, SRC, T, S>(a, g);
                        });
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
  /* SSP-RK3, one step a pass: the base from level 0's ring and the plane before it */
  fails += run<TSR_MODEL_HEAT, 1, 3, false, double, 3>(b1, 0x3f, 0);
  fails += run<TSR_MODEL_HEAT, 1, 3, true, double, 3>(b1, 0x0, 2);
  fails += run<TSR_MODEL_WAVE, 2, 3, true, float, 3>(b1, 0x22, 2);
  fails += run<TSR_MODEL_GRAY_SCOTT, 2, 3, false, double, 3>(b2, 0x30, 2);
  fails += run<TSR_MODEL_ADVECTION_DIFFUSION, 1, 3, true, float, 3>(b1, 0x3c, 1);
  /* SSP-RK2, one step a pass: the base from level 0's ring */
  fails += run<TSR_MODEL_HEAT, 1, 2, true, double, 2>(b1, 0x15, 2);
  fails += run<TSR_MODEL_WAVE, 2, 2, false, float, 2>(b2, 0x3f, 0);
  /* RK4, one step a pass: the base as SSP-RK3's, the running sums in shared memory */
  fails += run<TSR_MODEL_HEAT, 1, 4, false, double, 4>(b1, 0x3f, 0);
  fails += run<TSR_MODEL_HEAT, 1, 4, true, float, 4>(b1, 0x0, 2);
  fails += run<TSR_MODEL_WAVE, 2, 4, true, double, 4>(b1, 0x22, 2);
  fails += run<TSR_MODEL_GRAY_SCOTT, 2, 4, false, float, 4>(b2, 0x30, 2);
  fails += run<TSR_MODEL_ADVECTION_DIFFUSION, 1, 4, true, double, 4>(b1, 0x3c, 1);
  printf("%d failed\n", fails);
  return fails != 0;
}
