/* What the 2D and 3D time-tile kernels (kernels/steps2_cuda.cuh, steps3_cuda.cuh) share:
 * their rings' slot arithmetic and the stage kind of a level. Included inside their
 * includer's namespace (kernels/steps_launch_cuda.cuh) or by the CPU emulators. */
#pragma once

template <int R>
__device__ __forceinline__ constexpr int slot(int k) { /* (R + k) mod 3 for small k */
  return ((R + k) % 3 + 3) % 3;
}

/* The stage kind of level l (1 ..) of a pass of a scheme of S stages a step (kernels/steps.h:
 * tsr_steps_kind, which device code cannot call). */
template <int S>
__host__ __device__ __forceinline__ constexpr int level_kind(int l) {
  return (l - 1) % S == 0 ? TSR_STAGE_EULER
         : S == 2         ? TSR_STAGE_SSP2_2
         : (l - 1) % S == 1 ? TSR_STAGE_SSP3_2
                            : TSR_STAGE_SSP3_3;
}
