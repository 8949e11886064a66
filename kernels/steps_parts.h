/* The four compiled parts of tsr_steps_cuda (kernels/steps_cuda.cu), one dimension and
 * precision each (kernels/steps{2,3}_{f32,f64}_cuda.cu, from kernels/steps_launch_cuda.cuh):
 * internal to those files; C++ linkage, so a part whose arguments drift fails to link. */
#ifndef TSR_KERNELS_STEPS_PARTS_H
#define TSR_KERNELS_STEPS_PARTS_H

#include <cuda_runtime.h>

extern "C" {
#include "kernels/steps.h"
}

#define TSR_STEPS_PART_ARGS                                                                    \
  const tsr_stage_desc *s, int m, const tsr_box *rg, const tsr_steps_bc *bc,                   \
      const tsr_field *in, const tsr_field *src, tsr_field *out, cudaStream_t stream

tsr_err tsr_steps_cuda2_f32(TSR_STEPS_PART_ARGS);
tsr_err tsr_steps_cuda2_f64(TSR_STEPS_PART_ARGS);
tsr_err tsr_steps_cuda3_f32(TSR_STEPS_PART_ARGS);
tsr_err tsr_steps_cuda3_f64(TSR_STEPS_PART_ARGS);

/* Shared memory a block of a 3D pass of levels levels (stages a step) takes, nc components of
 * es bytes. */
size_t tsr_steps_cuda3_bytes(int levels, int nc, size_t es, int stages);

#endif
