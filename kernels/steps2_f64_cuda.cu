/* tsr_steps_cuda's 2D double part (kernels/steps_parts.h). */
#include "kernels/steps_launch_cuda.cuh"

tsr_err tsr_steps_cuda2_f64(TSR_STEPS_PART_ARGS) {
  return steps_typed<double>(s, m, rg, bc, in, src, out, stream);
}
