/* Reductions of a field's owned cells for the monitors. */
#ifndef TSR_REDUCE_H
#define TSR_REDUCE_H

#include "kernels/field.h"

#ifdef TSR_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Per component: min, max, sum, sum of squares, and against an exact field the sum of squared
 * errors and the largest error. A non-finite value makes min -inf, max and emax +inf. */
enum { TSR_NORM_MIN, TSR_NORM_MAX, TSR_NORM_SUM, TSR_NORM_SQ, TSR_NORM_ESQ, TSR_NORM_EMAX,
       TSR_NNORM };

#ifdef TSR_HAVE_CUDA

/* Norms of component comp of the device field u over its owned cells (and its error against
 * exact, a device field of the same shape, when not NULL) into out[TSR_NNORM]. Launches on
 * stream and waits for it. Deterministic: a fixed grid, fixed-order tree sums per block and a
 * fixed-order sum of the block partials on the host. Errors: TSR_ERR_CUDA. */
tsr_err tsr_reduce_cuda(const tsr_field *u, const tsr_field *exact, int comp, double *out,
                        cudaStream_t stream);

#endif

#ifdef __cplusplus
}
#endif

#endif
