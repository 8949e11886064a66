/* tsr_steps_cuda: MS forward Euler steps of a region in one pass over memory (kernels/steps.h):
 * the 2D kernel in kernels/steps2_cuda.cuh, the 3D one in kernels/steps3_cuda.cuh, both
 * included below; here their launches. */
#include <cuda_runtime.h>
#include <limits.h>

#include <type_traits>

#include <nccl.h> /* C++ overloads inside: keep it out of the extern "C" block below */

extern "C" {
#include "kernels/cuda_util.h"
#include "kernels/steps.h"
}

namespace {

/* 2D: steps_kernel */
#include "kernels/steps2_cuda.cuh"

/* 3D: steps3_kernel */
#include "kernels/steps3_cuda.cuh"

/* The step counts compiled: the driver's passes are odd (solver/run.c says why), and each
 * count is an instantiation per model, precision and source flag. */
template <int M, int NC, bool SRC, typename T>
void launch_ms(int ms, dim3 grid, const steps_args<T> &a, cudaStream_t st) {
  switch (ms) {
  case 3: steps_kernel<M, NC, 3, SRC, T><<<grid, kBX, 0, st>>>(a); break;
  case 5: steps_kernel<M, NC, 5, SRC, T><<<grid, kBX, 0, st>>>(a); break;
  default: break;
  }
}

template <int M, int NC, typename T>
void launch_model(int ms, bool src, dim3 grid, const steps_args<T> &a, cudaStream_t st) {
  if (src) launch_ms<M, NC, true, T>(ms, grid, a, st);
  else launch_ms<M, NC, false, T>(ms, grid, a, st);
}

/* 3D: the shared planes may pass the 48 KB a launch gets without asking */
template <int M, int NC, int MS, bool SRC, typename T>
cudaError_t launch3(dim3 grid, const steps3_args<T> &a, cudaStream_t st) {
  constexpr size_t bytes = steps3_smem_bytes<NC, MS, T>();
  cudaError_t e = cudaFuncSetAttribute(steps3_kernel<M, NC, MS, SRC, T>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
  if (e != cudaSuccess) return e;
  steps3_kernel<M, NC, MS, SRC, T><<<grid, dim3(32, k3BY, 1), bytes, st>>>(a);
  return cudaSuccess;
}

template <int M, int NC, typename T>
cudaError_t launch_model3(int ms, bool src, dim3 grid, const steps3_args<T> &a, cudaStream_t st) {
  if (ms == 3) return src ? launch3<M, NC, 3, true>(grid, a, st) : launch3<M, NC, 3, false>(grid, a, st);
  if (ms == 5) return src ? launch3<M, NC, 5, true>(grid, a, st) : launch3<M, NC, 5, false>(grid, a, st);
  return cudaSuccess;
}

bool on_device(const tsr_field *f) { return !f || f->mem == TSR_MEM_DEVICE; }

template <typename T>
tsr_err steps_typed(const tsr_stage_desc *s, int m, const tsr_box *rg, const tsr_steps_bc *bc,
                    const tsr_field *in, const tsr_field *src, tsr_field *out,
                    cudaStream_t stream) {
  if (tsr_box_empty(rg)) return TSR_OK;
  steps_args<T> a;
  TSR_CALL(steps2_fill(&a, s, rg, bc, in, src, out));
  const dim3 grid = steps2_grid(rg, m, in->ncomp);
  const bool has_src = src != nullptr;
  switch (s->model) {
  case TSR_MODEL_HEAT: launch_model<TSR_MODEL_HEAT, 1>(m, has_src, grid, a, stream); break;
  case TSR_MODEL_ADVECTION_DIFFUSION:
    launch_model<TSR_MODEL_ADVECTION_DIFFUSION, 1>(m, has_src, grid, a, stream);
    break;
  case TSR_MODEL_WAVE: launch_model<TSR_MODEL_WAVE, 2>(m, has_src, grid, a, stream); break;
  case TSR_MODEL_GRAY_SCOTT:
    launch_model<TSR_MODEL_GRAY_SCOTT, 2>(m, has_src, grid, a, stream);
    break;
  case TSR_MODEL_ALLEN_CAHN:
    launch_model<TSR_MODEL_ALLEN_CAHN, 1>(m, has_src, grid, a, stream);
    break;
  case TSR_MODEL_IGNITION: launch_model<TSR_MODEL_IGNITION, 1>(m, has_src, grid, a, stream); break;
  default: break;
  }
  TSR_CUDA_LAUNCHED("time-tile kernel");
  return TSR_OK;
}

/* The shared memory a 3D pass of m steps needs a block (steps3_smem_bytes, at run time). */
size_t steps3_bytes(int m, int ncomp, size_t es) {
  return (size_t)m * 2 * (size_t)ncomp * k3Plane * es;
}

template <typename T>
tsr_err steps3_typed(const tsr_stage_desc *s, int m, const tsr_box *rg, const tsr_steps_bc *bc,
                     const tsr_field *in, const tsr_field *src, tsr_field *out,
                     cudaStream_t stream) {
  if (tsr_box_empty(rg)) return TSR_OK;
  TSR_CHECK(k3TX > 2 * m && k3TY > 2 * m, TSR_ERR_STATE,
            "tsr_steps_cuda: a 3D tile of %d x %d columns (TSR_STEPS3_*) cannot take %d steps "
            "(it needs more than %d along each axis)", k3TX, k3TY, m, 2 * m);
  int dev = 0, optin = 0;
  TSR_CUDA(cudaGetDevice(&dev));
  TSR_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  const size_t need = steps3_bytes(m, in->ncomp, sizeof(T));
  TSR_CHECK(need <= (size_t)optin, TSR_ERR_STATE,
            "tsr_steps_cuda: a 3D pass of %d steps of %d components needs %zu bytes of shared "
            "memory a block, the device has %d: take fewer steps or a smaller tile (TSR_STEPS3_*)",
            m, in->ncomp, need, optin);
  steps3_args<T> a;
  steps3_fill(&a, s, rg, bc, in, src, out);
  int g[3];
  steps3_grid(rg, m, g);
  dim3 grid((unsigned)g[0], (unsigned)g[1], (unsigned)g[2]);
  const bool has_src = src != nullptr;
  cudaError_t e = cudaSuccess;
  switch (s->model) {
  case TSR_MODEL_HEAT: e = launch_model3<TSR_MODEL_HEAT, 1>(m, has_src, grid, a, stream); break;
  case TSR_MODEL_ADVECTION_DIFFUSION:
    e = launch_model3<TSR_MODEL_ADVECTION_DIFFUSION, 1>(m, has_src, grid, a, stream);
    break;
  case TSR_MODEL_WAVE: e = launch_model3<TSR_MODEL_WAVE, 2>(m, has_src, grid, a, stream); break;
  case TSR_MODEL_GRAY_SCOTT:
    e = launch_model3<TSR_MODEL_GRAY_SCOTT, 2>(m, has_src, grid, a, stream);
    break;
  case TSR_MODEL_ALLEN_CAHN:
    e = launch_model3<TSR_MODEL_ALLEN_CAHN, 1>(m, has_src, grid, a, stream);
    break;
  case TSR_MODEL_IGNITION:
    e = launch_model3<TSR_MODEL_IGNITION, 1>(m, has_src, grid, a, stream);
    break;
  default: break;
  }
  TSR_CUDA(e);
  TSR_CUDA_LAUNCHED("3D time-tile kernel");
  return TSR_OK;
}

} // namespace

/* What the driver takes (bench/gpu_tiles on an H200, 2D 20480^2, session 14): fp64 passes of 3
 * steps run 1.77x the single-step kernel (425 against 241 Gcells/s), passes of 5 only 1.21x
 * (more registers a thread, fewer warps); fp32 passes are no faster than fp32 single steps
 * (404 against 415: the arithmetic is double either way, so a pass is bound by instructions,
 * not bytes), so fp32 steps stage by stage. 3D (steps3_kernel, 512^3, session 15): fp64 passes
 * of 3 run 0.98x the single-step kernel (206 against 210 Gcells/s; passes of 5 0.81x), but a
 * whole run with fuse 3 1.24x one with fuse 1 (194 against 155-158: the run's single steps
 * reach only 0.75 of the kernel's rate, and a pass pays the rest once for three steps); fp32 passes run 0.55x the fp32 single step (the
 * arithmetic is double either way): stage by stage. bench/README.md, gpu_tiles. */
extern "C" int tsr_steps_cuda_max(int dim, tsr_prec prec) {
  return (dim == 2 || dim == 3) && prec == TSR_PREC_DOUBLE ? 3 : 0;
}

extern "C" tsr_err tsr_steps_cuda(const tsr_stage_desc *s, int m, int radius, const tsr_box *rg,
                                  const tsr_steps_bc *bc, const tsr_field *in,
                                  const tsr_field *src, tsr_field *out, cudaStream_t stream) {
  TSR_CHECK(in && out && in != out && on_device(in) && on_device(src) && on_device(out),
            TSR_ERR_STATE, "tsr_steps_cuda needs distinct device fields");
  TSR_CHECK(s->kind == TSR_STAGE_EULER && radius == 1 && s->coef.dim == in->dim &&
                (in->dim == 2 || in->dim == 3) &&
                (m == 1 || m == 3 || m == 5),
            TSR_ERR_STATE, "tsr_steps_cuda: %d steps of kind %d, radius %d, dimension %d", m,
            (int)s->kind, radius, s->coef.dim);
  TSR_CHECK(s->model >= 0 && s->model < TSR_MODEL_COUNT &&
                (tsr_models[s->model].methods & TSR_METHODS_EXPLICIT),
            TSR_ERR_STATE, "tsr_steps_cuda: model %d has no explicit stage", s->model);
  TSR_CHECK(in->ghost >= m && (!src || src->prec == in->prec) && out->prec == in->prec,
            TSR_ERR_STATE, "tsr_steps_cuda: ghosts %d for %d steps, or mixed precisions",
            in->ghost, m);
  if (m == 1) return tsr_stage_cuda(s, rg, in, NULL, NULL, src, out, stream);
  if (in->dim == 3) {
    if (in->prec == TSR_PREC_SINGLE) return steps3_typed<float>(s, m, rg, bc, in, src, out, stream);
    return steps3_typed<double>(s, m, rg, bc, in, src, out, stream);
  }
  if (in->prec == TSR_PREC_SINGLE) return steps_typed<float>(s, m, rg, bc, in, src, out, stream);
  return steps_typed<double>(s, m, rg, bc, in, src, out, stream);
}
