/* Parareal's coarse steps on a GPU in one launch (kernels/block_steps.h). The coarse grid of a
 * small case (64^2 for a 256^2 case coarsened 4 times) is all launch latency: its steps in
 * CUDA graphs cost 4.7 us each on an H100, two launches a step. Where the coarse grid
 * exchanges nothing (one space rank, no periodic axis) and no value depends on t, a slice's
 * coarse steps run as one launch of a cluster of blocks instead, the fields in their shared
 * memory, with the bits of the launches.
 * Private to solver/parareal/; without CUDA it never applies. */
#ifndef TSR_PARAREAL_COARSE_H
#define TSR_PARAREAL_COARSE_H

#include <stdint.h>

#include "io/error.h"
#include "kernels/block_steps.h"
#include "kernels/field.h"

struct tsr_run_ctx;

/* The value v (NULL: unset) of the environment variable name (TESSERA_PARAREAL_COARSE_BLOCK,
 * TESSERA_PARAREAL_FINE_BLOCK) into *mode: 0 off, 1 auto (unset, "", "auto": where the fields
 * fit in the blocks' shared memory, tsr_block_steps_staged), 2 on (any size where it
 * applies). Anything else: TSR_ERR_INPUT naming the variable. */
tsr_err tsr_pr_block_env(const char *name, const char *v, int *mode);

/* tsr_pr_block_env of the variable name's value in the environment. */
tsr_err tsr_pr_block_mode(const char *name, int *mode);

/* *on = 1 when the coarse context y (set up) takes its steps in one launch: the CUDA backend,
 * one rank, nothing exchanged, no rebalancer, no time tiles, no source or boundary value that
 * depends on t, the environment's mode allowing it. Evaluates the source and boundary values
 * once. Errors: those of tsr_pr_block_env, and the backend's. */
tsr_err tsr_pr_coarse_block_pick(struct tsr_run_ctx *y, int *on);

#ifdef TSR_HAVE_CUDA
/* y's scheme as kernels/block_steps.h takes it, and RK4's accumulator (NULL for other
 * schemes). */
tsr_block_scheme tsr_pr_block_scheme(const struct tsr_run_ctx *y);
tsr_field *tsr_pr_block_acc(const struct tsr_run_ctx *y);
#endif

/* n steps of y from its slot U at its dt (y->desc.dt), as tsr_explicit_advance(y, 0, n, 0) gives
 * them, in one launch on y's compute stream (asynchronous); the slots swap as the steps do. */
tsr_err tsr_pr_coarse_block_advance(struct tsr_run_ctx *y, int64_t n);

#endif
