/* The work of each cell's update: what the rebalancer's cost map sums (DESIGN.md, Decomposition
 * and rebalancing: costly cells). For most models every cell costs the same (1); a model whose
 * cost depends on the local state (tsr_models[m].varies, e.g. ignition's sub-stepped reaction)
 * counts it with its pure per-cell function (tsr_model_work, kernels/models/all.h), so every
 * rank and backend counts the same cells alike. */
#ifndef TSR_WORK_H
#define TSR_WORK_H

#include <stdint.h>

#include "kernels/stage.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fills work[] with the work count of each cell of region (inside u's owned box) in a stage of
 * s (its model, coefficients and dt; s->coef's strides must be u's): tsr_box_cells(region)
 * values, x fastest, then y, then z; *total (may be NULL) gets their sum. u: a host field with
 * valid ghosts where region's stencil reads them, either precision (values are read as
 * double, as tsr_stage_host reads them, so the counts are the stage's). work is the caller's.
 * Errors: TSR_ERR_STATE (a device field, region outside the owned box, ncomp not the model's). */
tsr_err tsr_work_host(const tsr_stage_desc *s, const tsr_box *region, const tsr_field *u,
                      int32_t *work, int64_t *total);

#ifdef TSR_HAVE_CUDA
#include <cuda_runtime_api.h>

/* As tsr_work_host for a device field, into work (device memory, the caller's), launched on
 * stream (asynchronous; no total: sum it on the device or after a copy). The counts are the
 * host's bit for bit (same per-cell function, no libm). Errors: TSR_ERR_STATE (a host field,
 * region outside the owned box, ncomp not the model's), TSR_ERR_CUDA (launch). */
tsr_err tsr_work_cuda(const tsr_stage_desc *s, const tsr_box *region, const tsr_field *u,
                      int32_t *work, cudaStream_t stream);
#endif

#ifdef __cplusplus
}
#endif

#endif
