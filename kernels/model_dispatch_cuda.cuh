/* The one map from an explicit model's run-time id to the kernels' template arguments: calls
 * l.template go<M, NC>() (M the model, NC its components) for each model with an explicit
 * stage, nothing for the others. The stage kernels (kernels/stage_cuda.cuh), the time tiles
 * (kernels/steps_launch_cuda.cuh) and the block steps (kernels/block_steps.cu) all go through
 * it, so a model added here reaches every GPU path of the explicit method. */
#ifndef TSR_KERNELS_MODEL_DISPATCH_CUDA_CUH
#define TSR_KERNELS_MODEL_DISPATCH_CUDA_CUH

extern "C" {
#include "kernels/models/all.h"
}

template <typename L>
inline void tsr_dispatch_model(int model, const L &l) {
  switch (model) {
  case TSR_MODEL_HEAT: l.template go<TSR_MODEL_HEAT, 1>(); break;
  case TSR_MODEL_ADVECTION_DIFFUSION: l.template go<TSR_MODEL_ADVECTION_DIFFUSION, 1>(); break;
  case TSR_MODEL_WAVE: l.template go<TSR_MODEL_WAVE, 2>(); break;
  case TSR_MODEL_GRAY_SCOTT: l.template go<TSR_MODEL_GRAY_SCOTT, 2>(); break;
  case TSR_MODEL_ALLEN_CAHN: l.template go<TSR_MODEL_ALLEN_CAHN, 1>(); break;
  case TSR_MODEL_IGNITION: l.template go<TSR_MODEL_IGNITION, 1>(); break;
  default: break;
  }
}

#endif
