/* The 2D time-tile kernel (steps_kernel, kernels/steps2_cuda.cuh) run on the CPU, bit for bit
 * against tsr_steps_host, as emulate_steps3.cpp runs the 3D one: one OS thread per CUDA thread,
 * a block at a time, the barriers a std::barrier. The kernel's __shared__ array becomes a
 * function-static one (one per instantiation, shared by the block's threads; a block finds the
 * block before's values in it, not zeros). The arithmetic is the host compiler's, so only the
 * GPU test (tests/gpu/test_steps_gpu.c) checks the device's bits. Any launch shape the
 * TSR_STEPS_* macros give can be checked by rebuilding with them (CXXFLAGS). Exits non-zero on
 * a difference. */
extern "C" {
#include "kernels/steps.h"
}
#include "tests/unit/emulate_kernel.h"
#include "tests/unit/emulate_steps.h"
#undef __shared__
#define __shared__ static
#include "kernels/steps2_cuda.cuh"

template <int M, int NC, int MS, bool SRC, typename T, int S = 1>
static int run(tsr_box box, int faces, int grow) {
  return emu_steps_case(2, box, M, NC, sizeof(T) == 4, MS / S, S, SRC, faces, grow,
                        [](const tsr_stage_desc *d, const tsr_box *rg, const tsr_steps_bc *bc,
                           tsr_field *in, tsr_field *src, tsr_field *out, int g[3]) {
                          steps_args<T> a;
                          if (steps2_fill(&a, d, rg, bc, in, src, out) != TSR_OK) {
                            printf("steps2_fill: %s\n", tsr_err_message());
                            exit(1);
                          }
                          const dim3 gd = steps2_grid(rg, MS, NC);
                          const unsigned gu[3] = {gd.x, gd.y, 1};
                          g[0] = (int)gd.x;
                          g[1] = (int)gd.y;
                          emu_launch(gu, kBX, 1, [] {}, [&] { steps_kernel<M, NC, MS, SRC, T, S>(a); });
                        });
}

int main() {
  int fails = 0;
  /* wider than a tile (kBX - 2 MS columns) and taller than a chunk (TSR_STEPS_CHUNK rows) */
  tsr_box b1 = {{-3, 5, 0}, {-3 + 300, 5 + 270, 1}};
  tsr_box b2 = {{1, -2, 0}, {3, 15, 1}};
  tsr_box b3 = {{7, 1, 0}, {7 + 130, 1 + 4, 1}};
  fails += run<TSR_MODEL_HEAT, 1, 3, false, double>(b1, 0xf, 0);
  fails += run<TSR_MODEL_HEAT, 1, 3, true, double>(b1, 0x0, 2);
  fails += run<TSR_MODEL_HEAT, 1, 5, false, float>(b1, 0x5, 2);
  fails += run<TSR_MODEL_WAVE, 2, 3, true, float>(b1, 0xa, 2);
  fails += run<TSR_MODEL_GRAY_SCOTT, 2, 5, false, double>(b2, 0xc, 2);
  fails += run<TSR_MODEL_ADVECTION_DIFFUSION, 1, 5, true, float>(b3, 0x9, 0);
  fails += run<TSR_MODEL_ALLEN_CAHN, 1, 3, false, double>(b3, 0xf, 1);
  /* SSP-RK3, one step a pass: the base from level 0's ring and the row before it */
  fails += run<TSR_MODEL_HEAT, 1, 3, false, double, 3>(b1, 0xf, 0);
  fails += run<TSR_MODEL_HEAT, 1, 3, true, double, 3>(b1, 0x0, 2);
  fails += run<TSR_MODEL_WAVE, 2, 3, true, float, 3>(b1, 0xa, 2);
  fails += run<TSR_MODEL_GRAY_SCOTT, 2, 3, false, double, 3>(b2, 0xc, 2);
  fails += run<TSR_MODEL_ADVECTION_DIFFUSION, 1, 3, true, float, 3>(b3, 0x9, 0);
  fails += run<TSR_MODEL_ALLEN_CAHN, 1, 3, false, double, 3>(b3, 0x5, 1);
  /* SSP-RK2, one step a pass: the base from level 0's ring */
  fails += run<TSR_MODEL_HEAT, 1, 2, true, double, 2>(b1, 0x3, 2);
  fails += run<TSR_MODEL_WAVE, 2, 2, false, float, 2>(b2, 0xf, 0);
  /* RK4, one step a pass: the base as SSP-RK3's, the running sums in a ring of registers */
  fails += run<TSR_MODEL_HEAT, 1, 4, false, double, 4>(b1, 0xf, 0);
  fails += run<TSR_MODEL_HEAT, 1, 4, true, float, 4>(b1, 0x0, 2);
  fails += run<TSR_MODEL_WAVE, 2, 4, true, double, 4>(b1, 0xa, 2);
  fails += run<TSR_MODEL_GRAY_SCOTT, 2, 4, false, float, 4>(b2, 0xc, 2);
  fails += run<TSR_MODEL_ADVECTION_DIFFUSION, 1, 4, true, double, 4>(b3, 0x9, 0);
  fails += run<TSR_MODEL_ALLEN_CAHN, 1, 4, false, double, 4>(b3, 0x5, 1);
  printf("%d failed\n", fails);
  return fails != 0;
}
