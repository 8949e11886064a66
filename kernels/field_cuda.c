/* Device memory for fields (CUDA runtime, called from C). */
#include <cuda_runtime_api.h>

#include "kernels/cuda_util.h"
#include "kernels/field.h"

tsr_err tsr_field_device_alloc(tsr_field *f, size_t bytes);
void tsr_field_device_free(tsr_field *f);
tsr_err tsr_field_device_zero(tsr_field *f, void *stream);

/* bytes (>= the field's) on the current device, the field's extent zeroed. */
tsr_err tsr_field_device_alloc(tsr_field *f, size_t bytes) {
  void *p = NULL;
  cudaError_t e = cudaMalloc(&p, bytes);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    int dev = -1;
    size_t freeb = 0, total = 0;
    cudaGetDevice(&dev);
    cudaMemGetInfo(&freeb, &total);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "out of GPU memory on device %d: a field needs %.1f MiB, %.1f MiB free of "
                       "%.1f MiB; use more GPUs or a smaller grid",
                       dev, bytes / 1048576.0, freeb / 1048576.0, total / 1048576.0);
  }
  TSR_CUDA(e);
  /* zeroed like host fields, so ghost corners no stencil writes stay deterministic; waited
   * for: the legacy stream's memset does not order the backend's non-blocking streams, and
   * kernels on them may write the field as soon as this returns */
  cudaError_t z = cudaMemset(p, 0, tsr_field_bytes(f));
  if (z == cudaSuccess) z = cudaStreamSynchronize(cudaStreamLegacy);
  if (z != cudaSuccess) cudaFree(p);
  TSR_CUDA(z);
  f->data = p;
  f->cap = bytes;
  return TSR_OK;
}

void tsr_field_device_free(tsr_field *f) {
  if (f->data) cudaFree(f->data);
  f->data = NULL;
  f->cap = 0;
}

tsr_err tsr_field_device_zero(tsr_field *f, void *stream) {
  TSR_CUDA(cudaMemsetAsync(f->data, 0, tsr_field_bytes(f), (cudaStream_t)stream));
  return TSR_OK;
}
