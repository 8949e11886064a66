/* Method pinn (DESIGN.md, PINN method): trains a network on the case's PDE, boundary and
 * initial conditions, and writes what the explicit method writes (final.h5 + XDMF sampled on
 * the grid's cells, snapshots at output times, report.json, checkpoints) plus history.csv.
 * On several ranks one network per rank's box (the classical partitioners), joined by
 * interface terms exchanged every iteration (solver/pinn/iface.h). The run driver
 * (solver/driver.c) runs it for method: pinn. */
#ifndef TSR_PINN_H
#define TSR_PINN_H

#include <mpi.h>
#include <stdio.h>

#include "io/case.h"
#include "solver/run.h"

/* The method itself is tsr_method_pinn (solver/method.h), which the driver runs: res gets
 * iterations (steps), wall (seconds training), the final loss (summed over the ranks'
 * networks) and the relative L2 error against exact over the whole grid (see tsr_run_result).
 * Its errors, the same on every rank where they are found collectively: TSR_ERR_INPUT (a grid
 * too small for the ranks, a checkpoint of another decomposition or of another L-BFGS phase, a
 * network too large for the memory, a loss that became NaN: the message names the iteration
 * and the term), TSR_ERR_IO, TSR_ERR_HDF5, TSR_ERR_MEMORY, TSR_ERR_MPI, TSR_ERR_NCCL,
 * TSR_ERR_CUDA. */

/* The plan of a PINN case for `tessera check` on nranks ranks: network, parameters, points
 * per term, each rank's box and points, memory. Errors: TSR_ERR_INPUT (a grid too small for
 * the ranks), TSR_ERR_MEMORY. */
tsr_err tsr_pinn_check(const tsr_case *c, int nranks, FILE *out);

#endif
