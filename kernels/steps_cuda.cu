/* tsr_steps_cuda: forward Euler steps, or an SSP-RK2, SSP-RK3 or RK4 step, of a region in one pass
 * over memory (kernels/steps.h).
 * Here the checks and the choice of part; the 2D kernel is in kernels/steps2_cuda.cuh, the 3D
 * one in kernels/steps3_cuda.cuh, their launches in kernels/steps_launch_cuda.cuh, compiled
 * once per dimension and precision (kernels/steps_parts.h). */
#include <cuda_runtime.h>

#include <nccl.h> /* C++ overloads inside: keep it out of the extern "C" block below */

extern "C" {
#include "kernels/cuda_util.h"
}
#include "kernels/steps_parts.h"

static bool on_device(const tsr_field *f) { return !f || f->mem == TSR_MEM_DEVICE; }

/* What the driver takes (bench/gpu_tiles, bench/README.md). 2D 20480^2 fp64 on an H200
 * (session 14): passes of 3 steps run 1.77x the single-step kernel (425 against 241 Gcells/s);
 * with the rows without tests (TSR_STEPS_FAST, session 20, one H100) 2.69x for heat and
 * 2.4-2.5x for every other model, and passes of 5 are faster still for the two-component
 * models (wave 3.08x against 2.46x, Gray-Scott 3.16x against 2.48x: their single step moves
 * twice the bytes), not for one component (heat 2.48x). Ignition's passes are slower than its
 * single steps (0.77x): its sub-stepped reaction makes each cell's update costly and the
 * single step bound by arithmetic, which a pass only repeats on its recomputed rim. 2D fp32
 * (the arithmetic double either way, so a pass costs the fp64 pass's instructions for half
 * its bytes): 1.07x on the H200 before the rows without tests; since them (session 22, one
 * H100) passes of 3 run 1.37-1.65x the fp32 single step (heat 1.47x, wave 1.63x, Gray-Scott
 * 1.65x, Allen-Cahn 1.43x, advection-diffusion 1.37x), and passes of 5 gain at most 4% more
 * (wave) or lose 19% (Gray-Scott), so fp32 takes passes of 3. 3D 512^3 fp64 (steps3_kernel):
 * passes of 3 ran 0.98x the single step on the H200 (session 15), 1.46x on an H100 since
 * sessions 19-21 (planes without tests, the input ring), 1.20x on an H200 (session 22, whose
 * faster memory speeds the single step, not the issue-bound pass); a whole run with fuse 3
 * ran 1.24x one with fuse 1 on the H200 (session 15), 1.56x on the H100 (session 21). fp32
 * 3D passes run 0.55-0.70x: 3D fp32 steps stage by stage. */
/* SSP-RK3 (the default scheme) and SSP-RK2 take one step a pass, their stages as levels,
 * wherever forward Euler's passes pay, and SSP-RK3 in 3D fp32 too: a stage-by-stage step moves
 * more bytes a cell than as many Euler steps (the stages after the first read the base too).
 * One H200 (session 28, bench/gpu_tiles --scheme ssp_rk3 and ssp_rk2), against the step stage
 * by stage: SSP-RK3 2D 20480^2 fp64 2.58x, fp32 1.67x, 3D 512^3 fp64 1.50x, fp32 1.14x;
 * SSP-RK2 2D fp64 2.02x, fp32 1.32x, 3D fp64 1.29x, fp32 0.98x. RK4 likewise, one step a pass
 * wherever SSP-RK3 takes one: stage by stage a step moves at least 128 bytes a cell in fp64
 * (its stages read the base and read and write the running sum), a pass 16. One H100 (session
 * 29, --scheme rk4): 2D fp64 4.68x, fp32 2.54x, 3D fp64 2.69x, fp32 1.52x; wave 5.10x,
 * Gray-Scott 3.48x, Allen-Cahn 4.39x. fp32 passes hold their levels on chip in double
 * (kernels/steps_ring_cuda.cuh, session 30), which made them 1.02-1.32x faster: one H100, 2D
 * heat forward Euler's pass of 3 616.7 Gcells/s against 466.4 (1.93x the fp32 single step,
 * 1.64x its streaming limit); one H200, Allen-Cahn and advection-diffusion 1.17-1.18x,
 * Gray-Scott 1.04x, SSP-RK3 3D 1.15x (1.31x the step stage by stage), RK4 1.09x, SSP-RK2 3D
 * 1.12x, which now pays (1.09x the step stage by stage, 0.97x before); 3D fp32 forward Euler's
 * pass of 3 is still slower than its single step (0.81x, 0.71x before). */
extern "C" int tsr_steps_cuda_max(int dim, tsr_prec prec, int model, int stages) {
  const bool fp32 = prec == TSR_PREC_SINGLE;
  if ((dim != 2 && dim != 3) || (prec != TSR_PREC_DOUBLE && !fp32) || model < 0 ||
      model >= TSR_MODEL_COUNT || !(tsr_models[model].methods & TSR_METHODS_EXPLICIT) ||
      tsr_models[model].varies || stages < 1 || stages > 4)
    return 0;
  int m = 0;
  if (fp32 && dim == 3) m = stages >= 2; /* forward Euler's passes lose there (0.81x) */
  else if (stages > 1) m = 1;
  else m = dim == 2 && !fp32 && tsr_models[model].ncomp == 2 ? 5 : 3;
  /* a 3D pass's shared planes must fit the GPU: RK4 of two components in double takes 211 KB,
   * which an H100 has and an A100 (163 KB) has not; there such steps go one stage a launch */
  size_t optin = 0;
  if (dim == 3 && m > 0 && tsr_cuda_smem_optin(&optin) == cudaSuccess) {
    const int S = stages > 1 ? stages : 1;
    if (tsr_steps_cuda3_bytes(m * S, tsr_models[model].ncomp, tsr_prec_size(prec), S) > optin)
      m = 0;
  }
  cudaGetLastError();
  return m;
}

extern "C" tsr_err tsr_steps_cuda(const tsr_stage_desc *s, int m, int radius, const tsr_box *rg,
                                  const tsr_steps_bc *bc, const tsr_field *in,
                                  const tsr_field *src, tsr_field *out, cudaStream_t stream) {
  TSR_CHECK(in && out && in != out && on_device(in) && on_device(src) && on_device(out),
            TSR_ERR_STATE, "tsr_steps_cuda needs distinct device fields");
  const bool euler = s->kind == TSR_STAGE_EULER,
             ssp = s->kind == TSR_STAGE_SSP2_2 || s->kind == TSR_STAGE_SSP3_3 ||
                   s->kind == TSR_STAGE_RK4_4; /* one step of several stages */
  TSR_CHECK(((euler && (m == 1 || m == 3 || m == 5)) || (ssp && m == 1)) && radius == 1 &&
                s->coef.dim == in->dim && (in->dim == 2 || in->dim == 3),
            TSR_ERR_STATE, "tsr_steps_cuda: %d steps of the scheme ending with stage kind %d "
            "(forward Euler takes 1, 3 or 5, SSP-RK2, SSP-RK3 and RK4 1), radius %d, dimension %d",
            m, (int)s->kind, radius, s->coef.dim);
  TSR_CHECK(s->model >= 0 && s->model < TSR_MODEL_COUNT &&
                (tsr_models[s->model].methods & TSR_METHODS_EXPLICIT) &&
                !(ssp && s->model == TSR_MODEL_IGNITION),
            TSR_ERR_STATE, "tsr_steps_cuda: model %d has no explicit stage, or no pass of this "
            "scheme", s->model);
  const int levels = m * tsr_steps_stages(s->kind);
  if (tsr_box_empty(rg)) return TSR_OK; /* as tsr_steps_host: nothing to check or launch */
  /* where every side is a face (nothing exchanged) the boundary's one ghost layer suffices:
   * the kernels clamp their loads into the allocation, and the values they load beyond it
   * reach no cell that is stored */
  TSR_CHECK(tsr_steps_fits(levels, radius, rg, bc, in, src, out), TSR_ERR_STATE,
            "tsr_steps_cuda: fields of %d ghosts too shallow for %d levels over the region, or "
            "of different shapes or precisions", in->ghost, levels);
  if (levels == 1) return tsr_stage_cuda(s, rg, in, NULL, NULL, src, out, stream);
  if (in->dim == 3) {
    if (in->prec == TSR_PREC_SINGLE) return tsr_steps_cuda3_f32(s, m, rg, bc, in, src, out, stream);
    return tsr_steps_cuda3_f64(s, m, rg, bc, in, src, out, stream);
  }
  if (in->prec == TSR_PREC_SINGLE) return tsr_steps_cuda2_f32(s, m, rg, bc, in, src, out, stream);
  return tsr_steps_cuda2_f64(s, m, rg, bc, in, src, out, stream);
}
