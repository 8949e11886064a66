// The current GPU against this build's device code (kernels/cuda_util.h): whether the code
// runs there, as which architecture, and the shared memory a block may have. Without the
// check a GPU the build has no code for fails at the first launch with the runtime's "no
// kernel image is available", which says nothing of the build's architectures or what to do.
#include <cuda_runtime.h>
#include <stdio.h>

#include "kernels/cuda_util.h"

#ifndef TSR_CUDA_ARCHS
#define TSR_CUDA_ARCHS "?"
#endif

namespace {
__global__ void arch_probe() {}
}  // namespace

extern "C" int tsr_cuda_code_arch(void) {
  static int known[64]; /* per device: 0 not asked, else the PTX version + 1 */
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  if (dev >= 0 && dev < 64 && known[dev]) return known[dev] - 1;
  cudaFuncAttributes fa;
  const int v = cudaFuncGetAttributes(&fa, arch_probe) == cudaSuccess ? fa.ptxVersion : 0;
  cudaGetLastError();
  if (dev >= 0 && dev < 64) known[dev] = v + 1;
  return v;
}

extern "C" cudaError_t tsr_cuda_smem_optin(size_t *bytes) {
  int dev = 0, n = 0;
  *bytes = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&n, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  if (e == cudaSuccess) *bytes = (size_t)n;
  return e;
}

extern "C" tsr_err tsr_cuda_check_arch(void) {
  cudaFuncAttributes fa;
  const cudaError_t e = cudaFuncGetAttributes(&fa, arch_probe);
  if (e == cudaSuccess) return TSR_OK;
  cudaGetLastError();
  int dev = 0, major = 0, minor = 0;
  char name[256] = "?";
  cudaDeviceProp prop;
  if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&prop, dev) == cudaSuccess) {
    major = prop.major;
    minor = prop.minor;
    snprintf(name, sizeof name, "%s", prop.name);
  }
  cudaGetLastError();
  if (e == cudaErrorUnsupportedPtxVersion)
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "GPU %d (%s) cannot run this build's kernels: %s; tessera was compiled "
                       "by CUDA %d.%d for architectures %s (CMAKE_CUDA_ARCHITECTURES), newer "
                       "than this node's driver takes: update the driver, or build with the "
                       "CUDA the driver supports, or run on CPU ranks (--backend host)",
                       dev, name, cudaGetErrorString(e), CUDART_VERSION / 1000,
                       CUDART_VERSION % 1000 / 10, TSR_CUDA_ARCHS);
  /* no code for this GPU, or only PTX that CUDA_DISABLE_PTX_JIT keeps from compiling */
  if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction ||
      e == cudaErrorJitCompilationDisabled) {
    char built[128];
    snprintf(built, sizeof built, "%s", TSR_CUDA_ARCHS);
    for (char *c = built; *c; ++c)
      if (*c == ',') *c = ';'; /* CMake's list, as the option takes it */
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "GPU %d (%s, compute capability %d.%d) cannot run this build's kernels "
                       "(%s): tessera was built for CUDA architectures %s "
                       "(CMAKE_CUDA_ARCHITECTURES); rebuild with -DCMAKE_CUDA_ARCHITECTURES=%d%d, "
                       "or \"%s;%d%d\" for these GPUs and the ones it was built for, or run on "
                       "CPU ranks (--backend host)",
                       dev, name, major, minor, cudaGetErrorString(e), built, major, minor, built,
                       major, minor);
  }
  return tsr_cuda_fail((int)e, "cudaFuncGetAttributes(&fa, arch_probe)", __FILE__, __LINE__);
}
