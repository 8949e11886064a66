/* What the 2D and 3D time-tile kernels (kernels/steps2_cuda.cuh, steps3_cuda.cuh) share:
 * their rings' slot arithmetic. Included inside their includer's namespace
 * (kernels/steps_launch_cuda.cuh) or by the CPU emulators. */
#pragma once

template <int R>
__device__ __forceinline__ constexpr int slot(int k) { /* (R + k) mod 3 for small k */
  return ((R + k) % 3 + 3) % 3;
}
