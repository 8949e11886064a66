/* The launches of the time-tile kernels (kernels/steps_cuda.cu is the entry): included by the
 * four parts kernels/steps{2,3}_{f32,f64}_cuda.cu, one dimension and precision each, so that
 * nvcc compiles the 96 kernels in parallel (as one file they took 6 minutes on 2 cores). */
#include <cuda_pipeline_primitives.h> /* cp.async: the 3D kernel's input planes */
#include <cuda_runtime.h>
#include <limits.h>

#include <type_traits>

#include <nccl.h> /* C++ overloads inside: keep it out of the extern "C" block below */

extern "C" {
#include "kernels/cuda_util.h"
}
#include "kernels/model_dispatch_cuda.cuh"
#include "kernels/steps_parts.h"

namespace {

/* 2D: steps_kernel */
#include "kernels/steps2_cuda.cuh"

/* 3D: steps3_kernel */
#include "kernels/steps3_cuda.cuh"

/* The passes compiled: forward Euler's of 3 and 5 steps (the driver's passes are odd:
 * solver/run_tiles.c says why) and one step of SSP-RK2, SSP-RK3 and RK4 (their stages: 2, 3
 * or 4 levels), each an instantiation per model, precision and source flag; ignition has only
 * forward Euler's (tsr_steps_cuda refuses the others: its passes do not pay,
 * tsr_steps_cuda_max). */
template <int M, int NC, bool SRC, typename T>
void launch_ms(int ms, int stages, dim3 grid, const steps_args<T> &a, cudaStream_t st) {
  if (stages > 1) {
    if constexpr (M != TSR_MODEL_IGNITION) {
      if (stages == 2 && ms == 2) steps_kernel<M, NC, 2, SRC, T, 2><<<grid, kBX, 0, st>>>(a);
      if (stages == 3 && ms == 3) steps_kernel<M, NC, 3, SRC, T, 3><<<grid, kBX, 0, st>>>(a);
      if (stages == 4 && ms == 4) steps_kernel<M, NC, 4, SRC, T, 4><<<grid, kBX, 0, st>>>(a);
    }
    return;
  }
  switch (ms) {
  case 3: steps_kernel<M, NC, 3, SRC, T><<<grid, kBX, 0, st>>>(a); break;
  case 5: steps_kernel<M, NC, 5, SRC, T><<<grid, kBX, 0, st>>>(a); break;
  default: break;
  }
}

template <int M, int NC, typename T>
cudaError_t launch_model(int ms, int stages, bool src, dim3 grid, const steps_args<T> &a,
                         cudaStream_t st) {
  if (src) launch_ms<M, NC, true, T>(ms, stages, grid, a, st);
  else launch_ms<M, NC, false, T>(ms, stages, grid, a, st);
  return cudaSuccess; /* the launch's own error: TSR_CUDA_LAUNCHED */
}

/* 3D: the shared planes may pass the 48 KB a launch gets without asking */
template <int M, int NC, int MS, bool SRC, typename T, int S = 1>
cudaError_t launch3(dim3 grid, const steps3_args<T> &a, cudaStream_t st) {
  constexpr size_t bytes = steps3_bytes(MS, NC, sizeof(T), S);
  cudaError_t e = cudaFuncSetAttribute(steps3_kernel<M, NC, MS, SRC, T, S>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
  if (e != cudaSuccess) return e;
  steps3_kernel<M, NC, MS, SRC, T, S><<<grid, dim3(32, k3BY, 1), bytes, st>>>(a);
  return cudaSuccess;
}

template <int M, int NC, typename T>
cudaError_t launch_model(int ms, int stages, bool src, dim3 grid, const steps3_args<T> &a,
                         cudaStream_t st) {
  if (stages > 1) {
    if constexpr (M != TSR_MODEL_IGNITION) {
      if (stages == 2 && ms == 2)
        return src ? launch3<M, NC, 2, true, T, 2>(grid, a, st)
                   : launch3<M, NC, 2, false, T, 2>(grid, a, st);
      if (stages == 3 && ms == 3)
        return src ? launch3<M, NC, 3, true, T, 3>(grid, a, st)
                   : launch3<M, NC, 3, false, T, 3>(grid, a, st);
      if (stages == 4 && ms == 4)
        return src ? launch3<M, NC, 4, true, T, 4>(grid, a, st)
                   : launch3<M, NC, 4, false, T, 4>(grid, a, st);
    }
    return cudaSuccess;
  }
  if (ms == 3) return src ? launch3<M, NC, 3, true>(grid, a, st) : launch3<M, NC, 3, false>(grid, a, st);
  if (ms == 5) return src ? launch3<M, NC, 5, true>(grid, a, st) : launch3<M, NC, 5, false>(grid, a, st);
  return cudaSuccess;
}

/* The model's kernels, 2D or 3D by the arguments' type: its id and components are template
 * arguments of every kernel (kernels/model_dispatch_cuda.cuh). */
template <typename Args>
struct model_launch {
  int ms, stages;
  bool src;
  dim3 grid;
  const Args &a;
  cudaStream_t st;
  cudaError_t *err;
  template <int M, int NC>
  void go() const { *err = launch_model<M, NC>(ms, stages, src, grid, a, st); }
};

/* ms: the pass's levels (steps x stages) */
template <typename Args>
cudaError_t launch_for(int model, int ms, int stages, bool src, dim3 grid, const Args &a,
                       cudaStream_t st) {
  cudaError_t e = cudaSuccess;
  tsr_dispatch_model(model, model_launch<Args>{ms, stages, src, grid, a, st, &e});
  return e;
}

template <typename T>
tsr_err steps_typed(const tsr_stage_desc *s, int m, const tsr_box *rg, const tsr_steps_bc *bc,
                    const tsr_field *in, const tsr_field *src, tsr_field *out,
                    cudaStream_t stream) {
  if (tsr_box_empty(rg)) return TSR_OK;
  const int S = tsr_steps_stages(s->kind), ms = m * S;
  steps_args<T> a;
  TSR_CALL(steps2_fill(&a, s, rg, bc, in, src, out));
  const dim3 grid = steps2_grid(rg, ms, in->ncomp);
  TSR_CUDA(launch_for(s->model, ms, S, src != nullptr, grid, a, stream));
  TSR_CUDA_LAUNCHED("time-tile kernel");
  return TSR_OK;
}

template <typename T>
tsr_err steps3_typed(const tsr_stage_desc *s, int m, const tsr_box *rg, const tsr_steps_bc *bc,
                     const tsr_field *in, const tsr_field *src, tsr_field *out,
                     cudaStream_t stream) {
  if (tsr_box_empty(rg)) return TSR_OK;
  const int S = tsr_steps_stages(s->kind), ms = m * S;
  TSR_CHECK(k3TX > 2 * ms && k3TY > 2 * ms, TSR_ERR_STATE,
            "tsr_steps_cuda: a 3D tile of %d x %d columns (TSR_STEPS3_*) cannot take %d levels "
            "(it needs more than %d along each axis)", k3TX, k3TY, ms, 2 * ms);
  size_t optin = 0;
  TSR_CUDA(tsr_cuda_smem_optin(&optin));
  const size_t need = steps3_bytes(ms, in->ncomp, sizeof(T), S);
  TSR_CHECK(need <= optin, TSR_ERR_STATE,
            "tsr_steps_cuda: a 3D pass of %d levels of %d components needs %zu bytes of shared "
            "memory a block, the device has %zu: take fewer steps or a smaller tile (TSR_STEPS3_*)",
            ms, in->ncomp, need, optin);
  steps3_args<T> a;
  steps3_fill(&a, s, rg, bc, in, src, out);
  int g[3];
  steps3_grid(rg, ms, g);
  dim3 grid((unsigned)g[0], (unsigned)g[1], (unsigned)g[2]);
  TSR_CUDA(launch_for(s->model, ms, S, src != nullptr, grid, a, stream));
  TSR_CUDA_LAUNCHED("3D time-tile kernel");
  return TSR_OK;
}

} // namespace
