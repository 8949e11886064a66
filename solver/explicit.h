/* The explicit method (DESIGN.md, Methods share one driver): Runge-Kutta steps of the fields
 * on the driver's shared pieces (solver/run_internal.h); the driver runs it through
 * tsr_method_explicit (solver/method.h). Parareal's propagators take its steps too
 * (tsr_explicit_advance). */
#ifndef TSR_EXPLICIT_H
#define TSR_EXPLICIT_H

#include <mpi.h>
#include <stdint.h>

#include "solver/run_internal.h"

/* Advances U by n steps from step `first`, step s from time t0 + s dt, as the step loop does
 * without its monitors, outputs and checkpoints (with t0 = 0 the steps are the loop's, bit for
 * bit): with x->fuse > 1 in blocks of that many steps from first (the last cut at first + n)
 * and time tiles where they apply. Plain launches. Asynchronous on GPUs. */
tsr_err tsr_explicit_advance(tsr_run_ctx *x, int64_t first, int64_t n, double t0);

/* Swaps the state slot with the scheme's result slot (x->flip changes), as after a step. */
void tsr_explicit_swap_slots(tsr_run_ctx *x);

#endif
