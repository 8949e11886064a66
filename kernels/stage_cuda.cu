/* tsr_stage_cuda and tsr_stage_cuda_batch (kernels/stage.h): the entries, the launch shape's
 * tuning, and the choice of part. The kernels, their launches and checks are in
 * kernels/stage_cuda.cuh, compiled once per storage type (kernels/stage_f32_cuda.cu,
 * stage_f64_cuda.cu). */
#include <cuda_runtime.h>

#include <nccl.h> /* C++ overloads inside: keep it out of the extern "C" block below */

extern "C" {
#include "kernels/cuda_util.h"
}
#include "kernels/stage_parts.h"

tsr_stage_cuda_tuning tsr_stage_cuda_tuning_now = {0, 0, 0, 0, 0, 0, 0};

extern "C" void tsr_stage_cuda_set_tuning(const tsr_stage_cuda_tuning *t) {
  tsr_stage_cuda_tuning_now = t ? *t : tsr_stage_cuda_tuning{0, 0, 0, 0, 0, 0, 0};
  /* a shape the kernels cannot launch (over __launch_bounds__, partial warps) falls back to the
   * default rather than failing every later stage */
  tsr_stage_cuda_tuning &g = tsr_stage_cuda_tuning_now;
  const int bx3 = g.bx3 > 0 ? g.bx3 : 64, by3 = g.by3 > 0 ? g.by3 : 4;
  if (bx3 % 32 || bx3 * by3 > 256) g.bx3 = g.by3 = 0;
  if (g.bx2 % 32 || g.bx2 > 256) g.bx2 = 0;
  if (g.chunk3 < 0) g.chunk3 = 0;
  if (g.chunk2 < 0) g.chunk2 = 0;
  if (g.chunkt3 < 0) g.chunkt3 = 0;
}

extern "C" tsr_err tsr_stage_cuda(const tsr_stage_desc *s, const tsr_box *rg, const tsr_field *in,
                                  const tsr_field *base, tsr_field *acc, const tsr_field *src,
                                  tsr_field *out, cudaStream_t stream) {
  TSR_CHECK(in, TSR_ERR_STATE, "tsr_stage_cuda needs an input field");
  if (in->prec == TSR_PREC_SINGLE)
    return tsr_stage_cuda_f32(s, rg, in, base, acc, src, out, stream);
  return tsr_stage_cuda_f64(s, rg, in, base, acc, src, out, stream);
}

extern "C" tsr_err tsr_stage_cuda_batch(const tsr_stage_desc *s, const tsr_box *rg, int n,
                                        const tsr_field *const *in, const tsr_field *const *base,
                                        tsr_field *const *acc, const tsr_field *const *src,
                                        tsr_field *const *out, cudaStream_t stream) {
  TSR_CHECK(n >= 0 && in && out, TSR_ERR_STATE, "tsr_stage_cuda_batch: %d fields, no arrays", n);
  if (n == 0) return TSR_OK;
  TSR_CHECK(in[0], TSR_ERR_STATE, "tsr_stage_cuda_batch needs input fields");
  if (in[0]->prec == TSR_PREC_SINGLE)
    return tsr_stage_cuda_batch_f32(s, rg, n, in, base, acc, src, out, stream);
  return tsr_stage_cuda_batch_f64(s, rg, n, in, base, acc, src, out, stream);
}
