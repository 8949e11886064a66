/* One explicit time-integration stage over a region of cells: r = rhs(in) + source, then the
 * scheme's update (kernels/models/all.h) into out (and RK4's accumulator). The host version
 * runs OpenMP threads over rows; the CUDA version (GPU issue) calls the same per-cell code. */
#ifndef TSR_STAGE_H
#define TSR_STAGE_H

#include "kernels/field.h"
#include "kernels/models/all.h"

#ifdef TSR_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int model;            /* tsr_model_id */
  int ncomp;
  tsr_stage_kind kind;
  double dt;
  tsr_cell_coef coef;   /* strides must be those of the fields below */
} tsr_stage_desc;

/* Fills the coefficients for model with parameter values p (model order) on a field's
 * strides and the grid spacing h. */
void tsr_stage_coef_init(tsr_cell_coef *k, int model, const double *p, const double h[3],
                         const tsr_field *shape);

/* Applies the stage to the cells of region (inside the owned box). in, base, acc, src and out
 * share one geometry and precision (values are loaded as double, stored rounded); in must hold valid ghosts for the cells region's stencil reads. base is
 * read by SSP stages 2-3 and RK4; acc by RK4 (NULL otherwise); src may be NULL (no source).
 * out may not alias in. Host memory; no errors (shapes are the caller's contract; a model
 * without TSR_METHODS_EXPLICIT has no stage and leaves out untouched). */
void tsr_stage_host(const tsr_stage_desc *s, const tsr_box *region, const tsr_field *in,
                    const tsr_field *base, tsr_field *acc, const tsr_field *src, tsr_field *out);

#ifdef TSR_HAVE_CUDA

#ifdef __cplusplus
extern "C" {
#endif

/* As tsr_stage_host, for device fields, launched on stream (asynchronous). The per-cell
 * arithmetic is the same source and order as the host's, so results are bitwise equal.
 * Errors: TSR_ERR_CUDA (launch), TSR_ERR_STATE (a host field, or a field the stage kind
 * needs is NULL, or out == in, or a model without TSR_METHODS_EXPLICIT). */
tsr_err tsr_stage_cuda(const tsr_stage_desc *s, const tsr_box *region, const tsr_field *in,
                       const tsr_field *base, tsr_field *acc, const tsr_field *src,
                       tsr_field *out, cudaStream_t stream);

/* The fields one batched launch takes; tsr_stage_cuda_batch launches once per this many. */
#define TSR_STAGE_BATCH_MAX 32

/* tsr_stage_cuda on n sets of fields at once (parareal's time slices sharing a GPU): field f
 * gets in[f], base[f], acc[f], src[f] -> out[f], as tsr_stage_cuda(s, region, ...) would give
 * it, bit for bit (the same per-thread body; 3D always through the register kernel, which
 * gives the tiles' bits), in one launch per TSR_STAGE_BATCH_MAX fields on stream
 * (asynchronous). Every in[f] has the geometry (allocated box, strides) and precision of
 * in[0]; base, acc and src may be NULL arrays (none), else src[f] is NULL for all f or for
 * none. The arrays are host memory, read before the call returns (a CUDA graph may capture
 * it). Errors: those of tsr_stage_cuda, and TSR_ERR_STATE for fields of different shapes. */
tsr_err tsr_stage_cuda_batch(const tsr_stage_desc *s, const tsr_box *region, int n,
                             const tsr_field *const *in, const tsr_field *const *base,
                             tsr_field *const *acc, const tsr_field *const *src,
                             tsr_field *const *out, cudaStream_t stream);

/* Launch shape of tsr_stage_cuda, for benchmarks and tests that tune it: threads per block in
 * x and y (3D), in x (2D), and cells each thread marches along z (3D) or y (2D); whether 3D
 * regions go through shared-memory tiles (tile3: 0 where a tile is at least half full, 1 for
 * every 3D region but the thin-x ones, 2 the same with planes copied asynchronously where the
 * model has one component, -1 never) and how many planes a tile marches (chunkt3).
 * 0 = the default (kernels/stage_cuda.cuh says which). bx * by must be at most 256, bx a
 * multiple of 32. */
typedef struct {
  int bx3, by3, chunk3;
  int bx2, chunk2;
  int tile3, chunkt3;
} tsr_stage_cuda_tuning;

/* Sets the launch shape for later calls in this process (NULL: defaults). Not thread-safe:
 * call it between steps, never while another thread launches stages. */
void tsr_stage_cuda_set_tuning(const tsr_stage_cuda_tuning *t);

#ifdef __cplusplus
}
#endif
#endif

#ifdef __cplusplus
}
#endif

#endif
