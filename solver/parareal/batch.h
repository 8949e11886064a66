/* Batched fine solves for parareal's slices sharing one GPU (solver/parareal/). A small grid
 * leaves the GPU idle between kernels: each slice stepping on its own streams still costs a
 * launch per slice per stage. Here the slices of a rank advance together: per stage one
 * boundary launch and one stage launch for all of them (kernels/boundary.h,
 * kernels/stage.h: tsr_*_cuda_batch), captured into CUDA graphs of many steps. Each slice
 * keeps its own context's fields; the per-cell code is the serial run's, so every slice's
 * result is the bits tsr_run_advance gives it. Private to solver/parareal/; without CUDA (or
 * where it does not apply) no batch is made and the slices step as before. */
#ifndef TSR_PARAREAL_BATCH_H
#define TSR_PARAREAL_BATCH_H

#include <stdint.h>

#include "io/error.h"
#include "kernels/field.h"

struct tsr_run_ctx;
typedef struct tsr_pr_batch tsr_pr_batch;

/* *b for the fine contexts fx[0 .. n) (each set up on the same box) when they can step in
 * batches: the CUDA backend, n > 1, one rank per group, no face exchanged (no peers, not
 * periodic), no source or boundary value that depends on t (so a slice's steps are the same
 * whatever its times), not TESSERA_PARAREAL_BATCH=off. Else *b = NULL, and the caller steps
 * each context itself. Evaluates the boundary values and sources once and waits for them. */
tsr_err tsr_pr_batch_create(struct tsr_run_ctx *fx, int n, tsr_pr_batch **b);

/* For the na contexts act[0 .. na): U := in[k], then steps[k] steps of fx[act[k]], then
 * out[k] := U, all on fx[0]'s compute stream (which orders it after the work issued there);
 * waits for the result. CUDA graphs of a whole number of steps for all of them at once (a
 * graph is captured again when the set of contexts changes); plain batched launches for the
 * rest, and everywhere when gpu.graphs is off or a capture failed. */
tsr_err tsr_pr_batch_solve(tsr_pr_batch *b, int na, const int *act, const int64_t *steps,
                           tsr_field *const *in, tsr_field *const *out);

/* Frees b (after its stream is idle). Accepts NULL; sets *b to NULL. */
void tsr_pr_batch_destroy(tsr_pr_batch **b);

#endif
