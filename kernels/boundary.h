/* Physical-boundary ghost fill for device fields (the host's is in solver/boundary.c); both
 * use tsr_ghost_value from kernels/models/boundary_cell.h. */
#ifndef TSR_KERNELS_BOUNDARY_H
#define TSR_KERNELS_BOUNDARY_H

#include "kernels/field.h"
#include "kernels/models/boundary_cell.h"

#ifdef TSR_HAVE_CUDA
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Fills ghost layers 1..f->ghost of face (a face of f's owned box) for every component from
 * vals (device memory, ncomp x n2 x n1), on stream. Errors: TSR_ERR_CUDA. */
tsr_err tsr_bc_apply_cuda(const tsr_bc_face *face, const double *vals, tsr_field *f,
                          cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif

#endif
