/* Parallel in time for the explicit method (DESIGN.md, "Decomposition: temporal"; README,
 * "Parallel in time: parareal"): decomposition.time_slices P splits [0, T] into P slices of
 * whole fine steps. Ranks form groups of equal spatial decompositions (world rank = group x
 * space ranks + space rank); each group runs slices_per_rank slices in turn. A fine
 * propagator F (the case's own steps, the explicit method's code) and a coarse one G (the same
 * model on the grid coarsened by parareal.coarsen, at its own stable step) iterate
 * U[n+1]^k = F(U[n]^(k-1)) + (G(U[n]^k) - G(U[n]^(k-1))): every slice's F at once, then the
 * coarse sweep from slice to slice, each group passing its end state to the next group's ranks
 * box to box. Where G's two values agree the slice keeps F's bits, so after k iterations the
 * first k slices equal the serial run bit for bit, and after P the whole run does. Every
 * operation is per cell and the stopping test a max norm, so the result does not depend on
 * the spatial decomposition. */
#ifndef TSR_PARAREAL_H
#define TSR_PARAREAL_H

#include <mpi.h>
#include <stdio.h>

#include "io/case.h"
#include "solver/run.h"

/* The method itself is tsr_method_parareal (solver/method.h), which the driver runs for a case
 * with decomposition.time_slices > 1 (method explicit): it writes final.h5, final.xmf,
 * report.json and the slice ends due by output.snapshot_every; *res on every rank. Its errors:
 * TSR_ERR_INPUT (a rank count that is not a multiple of the groups, a coarse step past its
 * stability limit, a solution that became non-finite), and those of the explicit method. */

/* For `tessera check`: the rank groups nranks makes (*nspace space ranks each) and the
 * parareal plan, printed to out. Errors: TSR_ERR_INPUT (nranks does not fit). */
tsr_err tsr_parareal_plan(const tsr_case *c, int nranks, int *nspace, FILE *out);

#endif
