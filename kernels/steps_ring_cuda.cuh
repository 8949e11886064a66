/* What the 2D and 3D time-tile kernels (kernels/steps2_cuda.cuh, steps3_cuda.cuh) share:
 * their rings' slot arithmetic and a level's stage update. Included inside their includer's
 * namespace (kernels/steps_launch_cuda.cuh) or by the CPU emulators. */
#pragma once

#include <type_traits>

template <int R>
__device__ __forceinline__ constexpr int slot(int k) { /* (R + k) mod 3 for small k */
  return ((R + k) % 3 + 3) % 3;
}

/* What a pass keeps of a level on chip (registers, shared memory): values of the field's type T,
 * held as chip_t<T>: T itself, or double for fp32 fields with TSR_STEPS_WIDE (the same values,
 * widened once where they are made instead of at each of the 5 or 7 reads of a stencil; an
 * sm_90 SM converts 16 values to or from double a clock, against 64 double adds). Narrow
 * (TSR_STEPS_WIDE=0, bench/tiles_variant.sh) against wide, session 30: 2D heat fp32 forward
 * Euler's pass of 3 466 -> 617 Gcells/s on an H100, every fp32 pass of 3 or one step
 * 1.02-1.18x faster on an H200; passes of 5, which fp32 does not take, lose for heat, wave
 * and Allen-Cahn (0.91-0.95x: registers) and gain for Gray-Scott. */
#ifndef TSR_STEPS_WIDE
#define TSR_STEPS_WIDE 1
#endif
template <typename T>
struct chip {
  using type = T;
};
template <>
struct chip<float> {
  using type = typename std::conditional<TSR_STEPS_WIDE != 0, double, float>::type;
};
template <typename T>
using chip_t = typename chip<T>::type;
/* bytes of an on-chip value for a field's of es bytes */
__host__ __device__ constexpr size_t chip_size(size_t es) {
  return es == sizeof(float) && TSR_STEPS_WIDE != 0 ? sizeof(double) : es;
}

/* Level l's update of a pass of S stages a step (kernels/steps.h): u the level's input at the
 * cell, r its right-hand side. A scheme of several stages is one step a pass, whose base is
 * level 0 at the cell: for the first two stages the level-0 ring's slot of the cell's row or
 * plane (bmid), for the third the value that slot held before the newest row or plane came in
 * (b3). RK4's running sum of the cell is acc, rounded to the field's type T as the
 * stage-by-stage path stores its acc field (and held as V, chip_t<T>); the fourth stage reads
 * acc4, the sum saved before the first stage took its slot. l is a constant where the kernels
 * unroll their levels. */
template <int S, typename T, typename V>
__device__ __forceinline__ T level_update(int l, double dt, V bmid, V b3, V *acc, V acc4, double u,
                                          double r) {
  const int kind = tsr_steps_kind(S, (l - 1) % S);
  const double ub = kind == TSR_STAGE_EULER || kind == TSR_STAGE_RK4_4 ? 0.0
                    : kind == TSR_STAGE_SSP3_3 || kind == TSR_STAGE_RK4_3 ? (double)b3
                                                                          : (double)bmid;
  double av = kind == TSR_STAGE_RK4_4 ? (double)acc4 : 0.0;
  if (kind == TSR_STAGE_RK4_2 || kind == TSR_STAGE_RK4_3) av = (double)*acc;
  const T v = (T)tsr_stage_update(kind, dt, ub, u, r, &av);
  if (tsr_stage_uses_acc(kind) && kind != TSR_STAGE_RK4_4) *acc = (V)(T)av;
  return v;
}
