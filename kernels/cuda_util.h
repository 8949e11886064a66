/* CUDA and NCCL errors as tsr_err: one message with the call's text, where it was made, the
 * MPI rank and the device, never a bare code. C-callable; only built with TSR_HAVE_CUDA. */
#ifndef TSR_CUDA_UTIL_H
#define TSR_CUDA_UTIL_H

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Records "CUDA error in CALL: <cudaGetErrorString> (rank R, device D, FILE:LINE)" and returns
 * TSR_ERR_CUDA. */
tsr_err tsr_cuda_fail(int code, const char *call, const char *file, int line);

/* Same for NCCL (ncclGetErrorString and ncclGetLastError), returns TSR_ERR_NCCL. */
tsr_err tsr_nccl_fail(int code, const char *call, const char *file, int line);

/* Whether the current GPU runs this build's device code. TSR_ERR_INPUT where the build has no
 * code for it (the message names the GPU, its compute capability, the architectures built
 * and the CMAKE_CUDA_ARCHITECTURES to rebuild with) or where the driver is older than the
 * code; TSR_ERR_CUDA for other failures. */
tsr_err tsr_cuda_check_arch(void);

/* The PTX version (e.g. 90) of this build's device code as the current GPU runs it: sm_80 code
 * run from its PTX on an H200 is 80. 0 where the GPU runs none of it. Asked once per device. */
int tsr_cuda_code_arch(void);

/* The shared memory a block may opt in to on the current GPU, in bytes (0 on an error, which
 * is returned and left pending for the caller to take or clear). */
cudaError_t tsr_cuda_smem_optin(size_t *bytes);

#ifdef __cplusplus
}
#endif

#define TSR_CUDA(call)                                                                         \
  do {                                                                                         \
    cudaError_t tsr_cu_e_ = (call);                                                            \
    if (tsr_cu_e_ != cudaSuccess) return tsr_cuda_fail((int)tsr_cu_e_, #call, __FILE__, __LINE__); \
  } while (0)

#define TSR_NCCL(call)                                                                         \
  do {                                                                                         \
    ncclResult_t tsr_nc_e_ = (call);                                                           \
    if (tsr_nc_e_ != ncclSuccess) return tsr_nccl_fail((int)tsr_nc_e_, #call, __FILE__, __LINE__); \
  } while (0)

/* After a kernel launch: the launch error (bad configuration, no device code for this GPU). */
#define TSR_CUDA_LAUNCHED(what) TSR_CUDA(cudaPeekAtLastError())

#endif
