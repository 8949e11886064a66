/* The two compiled parts of tsr_stage_cuda and tsr_stage_cuda_batch (kernels/stage_cuda.cu),
 * one storage type each (kernels/stage_{f32,f64}_cuda.cu, from kernels/stage_cuda.cuh), and the
 * launch shape they share: internal to those files; C++ linkage, so a part whose arguments
 * drift fails to link. */
#ifndef TSR_KERNELS_STAGE_PARTS_H
#define TSR_KERNELS_STAGE_PARTS_H

#include <cuda_runtime.h>

extern "C" {
#include "kernels/stage.h"
}

/* The launch shape in force: zeros are the defaults; only tsr_stage_cuda_set_tuning writes
 * it (benchmarks, the CPU emulation). */
extern tsr_stage_cuda_tuning tsr_stage_cuda_tuning_now;

tsr_err tsr_stage_cuda_f32(const tsr_stage_desc *s, const tsr_box *rg, const tsr_field *in,
                           const tsr_field *base, tsr_field *acc, const tsr_field *src,
                           tsr_field *out, cudaStream_t stream);
tsr_err tsr_stage_cuda_f64(const tsr_stage_desc *s, const tsr_box *rg, const tsr_field *in,
                           const tsr_field *base, tsr_field *acc, const tsr_field *src,
                           tsr_field *out, cudaStream_t stream);
tsr_err tsr_stage_cuda_batch_f32(const tsr_stage_desc *s, const tsr_box *rg, int n,
                                 const tsr_field *const *in, const tsr_field *const *base,
                                 tsr_field *const *acc, const tsr_field *const *src,
                                 tsr_field *const *out, cudaStream_t stream);
tsr_err tsr_stage_cuda_batch_f64(const tsr_stage_desc *s, const tsr_box *rg, int n,
                                 const tsr_field *const *in, const tsr_field *const *base,
                                 tsr_field *const *acc, const tsr_field *const *src,
                                 tsr_field *const *out, cudaStream_t stream);

#endif
