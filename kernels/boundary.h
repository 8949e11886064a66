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

/* The most faces one tsr_bc_apply_cuda call takes: a 3D box has six. */
#define TSR_BC_MAX_FACES 6

/* Fills ghost layers 1..layers of faces[0 .. nface) (faces of f's owned box, each over its
 * tangential cells from the box's lo + (o1, o2), those that part covers: TSR_BC_WHOLE,
 * _OWNED, _BEYOND) for every component, face i from vals[i] (device memory, ncomp x n2 x n1),
 * in one launch on stream. Errors: TSR_ERR_STATE (more than TSR_BC_MAX_FACES faces),
 * TSR_ERR_CUDA. */
tsr_err tsr_bc_apply_cuda(int nface, const tsr_bc_face *const *faces, const double *const *vals,
                          tsr_field *f, int part, cudaStream_t stream);

/* The most fields one tsr_bc_apply_cuda_batch launch takes (it launches once per this many). */
#define TSR_BC_BATCH_MAX 32

/* tsr_bc_apply_cuda on n fields of one geometry (box, allocation, strides, precision) with the
 * same faces and values, in one launch per TSR_BC_BATCH_MAX fields (parareal's time slices
 * sharing a GPU). f: a host array, read before the call returns. Errors: those of
 * tsr_bc_apply_cuda, and TSR_ERR_STATE for fields of different shapes. */
tsr_err tsr_bc_apply_cuda_batch(int nface, const tsr_bc_face *const *faces,
                                const double *const *vals, int n, tsr_field *const *f, int part,
                                cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif

#endif
