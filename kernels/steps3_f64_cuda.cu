/* tsr_steps_cuda's 3D double part (kernels/steps_parts.h). */
#include "kernels/steps_launch_cuda.cuh"

size_t tsr_steps_cuda3_bytes(int levels, int nc, size_t es, int stages) {
  return steps3_bytes(levels, nc, es, stages);
}

tsr_err tsr_steps_cuda3_f64(TSR_STEPS_PART_ARGS) {
  return steps3_typed<double>(s, m, rg, bc, in, src, out, stream);
}
