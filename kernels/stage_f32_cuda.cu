/* tsr_stage_cuda's float part (kernels/stage_parts.h). */
#include "kernels/stage_cuda.cuh"

tsr_err tsr_stage_cuda_f32(const tsr_stage_desc *s, const tsr_box *rg, const tsr_field *in,
                           const tsr_field *base, tsr_field *acc, const tsr_field *src,
                           tsr_field *out, cudaStream_t stream) {
  return stage_typed<float>(s, rg, in, base, acc, src, out, stream);
}

tsr_err tsr_stage_cuda_batch_f32(const tsr_stage_desc *s, const tsr_box *rg, int n,
                                 const tsr_field *const *in, const tsr_field *const *base,
                                 tsr_field *const *acc, const tsr_field *const *src,
                                 tsr_field *const *out, cudaStream_t stream) {
  return batch_typed<float>(s, rg, n, in, base, acc, src, out, stream);
}
