/* What the 2D and 3D time-tile kernels (kernels/steps2_cuda.cuh, steps3_cuda.cuh) share:
 * their rings' slot arithmetic and a level's stage update. Included inside their includer's
 * namespace (kernels/steps_launch_cuda.cuh) or by the CPU emulators. */
#pragma once

template <int R>
__device__ __forceinline__ constexpr int slot(int k) { /* (R + k) mod 3 for small k */
  return ((R + k) % 3 + 3) % 3;
}

/* Level l's update of a pass of S stages a step (kernels/steps.h): u the level's input at the
 * cell, r its right-hand side. A scheme of several stages is one step a pass, whose base is
 * level 0 at the cell: for the first two stages the level-0 ring's slot of the cell's row or
 * plane (bmid), for the third the value that slot held before the newest row or plane came in
 * (b3). RK4's running sum of the cell is acc, read and rewritten in the field's type T as the
 * stage-by-stage path stores its acc field; the fourth stage reads acc4, the sum saved before
 * the first stage took its slot. l is a constant where the kernels unroll their levels. */
template <int S, typename T>
__device__ __forceinline__ T level_update(int l, double dt, T bmid, T b3, T *acc, T acc4, double u,
                                          double r) {
  const int kind = tsr_steps_kind(S, (l - 1) % S);
  const double ub = kind == TSR_STAGE_EULER || kind == TSR_STAGE_RK4_4 ? 0.0
                    : kind == TSR_STAGE_SSP3_3 || kind == TSR_STAGE_RK4_3 ? (double)b3
                                                                          : (double)bmid;
  double av = kind == TSR_STAGE_RK4_4 ? (double)acc4 : 0.0;
  if (kind == TSR_STAGE_RK4_2 || kind == TSR_STAGE_RK4_3) av = (double)*acc;
  const T v = (T)tsr_stage_update(kind, dt, ub, u, r, &av);
  if (tsr_stage_uses_acc(kind) && kind != TSR_STAGE_RK4_4) *acc = (T)av;
  return v;
}
