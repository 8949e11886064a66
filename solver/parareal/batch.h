/* Batched fine solves for parareal's slices sharing one GPU (solver/parareal/). A small grid
 * leaves the GPU idle between kernels: each slice stepping on its own streams still costs a
 * launch per slice per stage. Here the slices of a rank advance together: per stage one
 * boundary launch and one stage launch for all of them (kernels/boundary.h,
 * kernels/stage.h: tsr_*_cuda_batch), captured into CUDA graphs of many steps. Each slice
 * keeps its own context's fields; the per-cell code is the serial run's, so every slice's
 * result is the bits tsr_explicit_advance gives it. Private to solver/parareal/; without CUDA (or
 * where it does not apply) no batch is made and the slices step as before. */
#ifndef TSR_PARAREAL_BATCH_H
#define TSR_PARAREAL_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "io/error.h"
#include "kernels/block_steps.h"
#include "kernels/field.h"

struct tsr_run_ctx;
typedef struct tsr_pr_batch tsr_pr_batch;

/* *b for the fine contexts fx[0 .. n) (each set up on the same box) when they can step in
 * batches: the CUDA backend, n > 1, one rank per group, no face exchanged (no peers, not
 * periodic), no source or boundary value that depends on t (so a slice's steps are the same
 * whatever its times), not TESSERA_PARAREAL_BATCH=off. Else *b = NULL, and the caller steps
 * each context itself. Evaluates the boundary values and sources once and waits for them.
 * Errors: TSR_ERR_INPUT for a TESSERA_PARAREAL_BATCH it cannot read (tsr_pr_batch_env). */
tsr_err tsr_pr_batch_create(struct tsr_run_ctx *fx, int n, tsr_pr_batch **b);

/* For the na contexts act[0 .. na): U := in[k], then steps[k] steps of fx[act[k]], then
 * out[k] := U, all on fx[0]'s compute stream (which orders it after the work issued there),
 * launch group by launch group (group g: the contexts of act in g group .. (g + 1) group - 1;
 * act ascending); waits for the result. CUDA graphs of a whole number of steps for each group
 * (captured again when a group's contexts change: where a slice turned exact); plain
 * batched launches for the rest, and everywhere when gpu.graphs is off or a capture failed.
 * Not interruptible: a stop signal that comes during it is acted on once it returns (the fine
 * solves' polls, solver/parareal/halt.c, come before and after it). */
tsr_err tsr_pr_batch_solve(tsr_pr_batch *b, int na, const int *act, const int64_t *steps,
                           tsr_field *const *in, tsr_field *const *out);

/* Launch groups. n slices' fields batched at once may not fit the GPU's L2 cache where a few
 * slices' do (3D 64^3: a slice's SSP-RK3 fields are about 9 MB, 16 slices' 140 MB against 50
 * MB of L2), and then every batched step streams them from DRAM. A launch group is the
 * slices that step together: each group runs all its steps before the next starts, so its
 * fields stay in L2 across steps. The order of the launches changes, not a value.
 *
 * The slices a group takes for n slices of slice_bytes each (the fields a step touches) on a
 * device with l2 bytes of L2: all n where they fit in it (or where not even two fit: then no
 * grouping keeps them there, and more slices a launch keep the GPU busier), else groups of
 * equal size, as few as fit. On an H100 (bench/README.md, session 23) groups of 4 of 16
 * slices at 3D 64^3 took the fine solves from 2.76 s to 2.36 s; groups that fit in half of
 * L2 were slower than these (2 there: 2.62 s) and, at 2D 256^2, than one launch of all 16
 * (8: 0.55 s against 0.49 s). */
int tsr_pr_batch_group(int n, size_t slice_bytes, size_t l2);

/* TESSERA_PARAREAL_BATCH's value v (NULL: unset): "off" gives *on = 0; unset, "", "auto" or
 * "on" *on = 1 with *group = 0 (tsr_pr_batch_group decides); a whole number g >= 1 *on = 1 and
 * *group = g slices a launch group. Anything else: TSR_ERR_INPUT naming the variable. */
tsr_err tsr_pr_batch_env(const char *v, int *on, int *group);

/* Whether b steps each slice's whole solve in one launch, the slices side by side
 * (kernels/block_steps.h), instead of a launch per stage: where a slice's fields fit in the
 * shared memory of a cluster of blocks (2D up to about 256^2 in double precision) and
 * TESSERA_PARAREAL_FINE_BLOCK (off, auto, on: coarse.h's tsr_pr_block_env) allows it; the
 * stencil's radius 1, at most 2 components. 0 for NULL. */
int tsr_pr_batch_block(const tsr_pr_batch *b);

/* How b's last fine solve in block steps ran (kernels/block_steps.h; zeros where none ran). */
tsr_block_shape tsr_pr_batch_block_shape(const tsr_pr_batch *b);

/* Slices in each of b's launch groups (the last may have fewer). */
int tsr_pr_batch_group_of(const tsr_pr_batch *b);

/* Frees b (after its stream is idle). Accepts NULL; sets *b to NULL. */
void tsr_pr_batch_destroy(tsr_pr_batch **b);

#endif
