/* Parareal's operations on fields (solver/parareal/): copy, restriction to the coarse grid,
 * prolongation from it, and the correction with the change it made. Each runs where its fields
 * live: host loops, or CUDA kernels on the run's compute stream (ops_cuda.cu); the per-cell
 * arithmetic is kernels/parareal.h. Private to solver/parareal/. */
#ifndef TSR_PARAREAL_OPS_H
#define TSR_PARAREAL_OPS_H

#include "kernels/field.h"

struct tsr_run_ctx;

/* Owned cells of src into dst (fields of one box, ghost width and precision). */
tsr_err tsr_parareal_copy(struct tsr_run_ctx *x, tsr_field *dst, const tsr_field *src);

/* Each owned coarse cell := the mean of the r^dim fine cells it covers (the fine box is the
 * coarse box times r). */
tsr_err tsr_parareal_restrict(struct tsr_run_ctx *x, int r, const tsr_field *fine,
                              tsr_field *coarse);

/* Each owned fine cell := the linear interpolation of the coarse field (kernels/parareal.h);
 * the coarse field's face ghosts must hold the boundary and the neighbours' values. */
tsr_err tsr_parareal_prolong(struct tsr_run_ctx *x, int r, const tsr_field *coarse,
                             tsr_field *fine);

/* out := f + (gnew - gold) on owned cells (f itself where gnew equals gold), and into chg[0]
 * the largest |out_new - out_old|, into chg[1] the largest |out_new|, over cells and
 * components of this rank (a non-finite value gives +inf). scratch: a field of out's shape
 * the device path may overwrite. Waits for the result. */
tsr_err tsr_parareal_correct(struct tsr_run_ctx *x, const tsr_field *f, const tsr_field *gnew,
                             const tsr_field *gold, tsr_field *out, tsr_field *scratch,
                             double chg[2]);

#ifdef TSR_HAVE_CUDA
#include <cuda_runtime_api.h>
/* The device side of the above (ops_cuda.cu), on stream. */
#ifdef __cplusplus
extern "C" {
#endif
tsr_err tsr_parareal_copy_cuda(tsr_field *dst, const tsr_field *src, cudaStream_t stream);
tsr_err tsr_parareal_restrict_cuda(int r, const tsr_field *fine, tsr_field *coarse,
                                   cudaStream_t stream);
tsr_err tsr_parareal_prolong_cuda(int r, const tsr_field *coarse, tsr_field *fine,
                                  cudaStream_t stream);
tsr_err tsr_parareal_correct_cuda(const tsr_field *f, const tsr_field *gnew,
                                  const tsr_field *gold, tsr_field *out, tsr_field *scratch,
                                  double chg[2], cudaStream_t stream);
#ifdef __cplusplus
}
#endif
#endif

#endif
