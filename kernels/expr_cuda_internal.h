/* Internal to kernels/expr_cuda.c and its tests: the NVRTC step alone, which needs no GPU,
 * so that CI (no device, no driver) can compile the generated source. */
#ifndef TSR_EXPR_CUDA_INTERNAL_H
#define TSR_EXPR_CUDA_INTERNAL_H

#include <stddef.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Compiles src with NVRTC for arch: "sm_XY" gives a cubin, "compute_XY" PTX (NUL-terminated,
 * counted in *size). Options: -fmad=false, --std=c++17, precise division and square root, no
 * flush to zero. *image (malloc'd, owned by the caller: free) and *size are set on success,
 * NULL and 0 on error. Errors: TSR_ERR_INTERNAL (NVRTC refused the source: the message holds
 * NVRTC's log; or an arch NVRTC does not know), TSR_ERR_CUDA (another NVRTC failure),
 * TSR_ERR_MEMORY. */
tsr_err tsr_expr_cuda_compile(const char *src, const char *arch, char **image, size_t *size);

#ifdef __cplusplus
}
#endif

#endif
