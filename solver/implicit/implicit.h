/* Method implicit (DESIGN.md, "Implicit method (PETSc)"): PETSc's TS advances the fields of the
 * run driver's decomposition (each rank's box is one contiguous block of PETSc's global
 * numbering) with backward Euler, Crank-Nicolson, BDF2 or an additive Runge-Kutta IMEX scheme;
 * the right-hand side is the model's pointwise definition fed by tessera's stencil and halo
 * exchange, the Jacobian is assembled (MPIAIJ) from the same definition's partials. The driver
 * (solver/driver.c) runs it as tsr_method_implicit for method: implicit. Builds without PETSc
 * keep the method, whose set-up then refuses the case with a message saying how to get
 * PETSc. */
#ifndef TSR_IMPLICIT_H
#define TSR_IMPLICIT_H

#include <mpi.h>

#include "io/case.h"
#include "solver/run.h"

/* "beuler", "cn", "bdf2", "ark_imex". Static storage. */
const char *tsr_implicit_scheme_name(tsr_implicit_scheme s);

/* 1 when this tessera was built with PETSc. */
int tsr_implicit_available(void);

/* What this PETSc cannot solve for case c, as `tessera check` and the run refuse it: single
 * precision, more unknowns than its indices number. TSR_OK without PETSc (check plans the
 * case; the run refuses it). */
tsr_err tsr_implicit_check(const tsr_case *c);

/* PETSc's version and configuration for `tessera info` ("3.18.5, real double scalars, 32-bit
 * indices, hypre yes, CUDA no"), or why there is none, into buf. Returns buf. */
const char *tsr_implicit_describe(char *buf, size_t size);

/* Whether a command-line argument is a PETSc option (one dash, then a letter: -ksp_type,
 * -log_view); the driver passes those, given after the case, with their values to
 * tsr_implicit_init. */
int tsr_implicit_is_option(const char *arg);

/* Initialises PETSc on comm (PETSC_COMM_WORLD = comm; after MPI_Init, which stays the
 * caller's) with the command-line options argv[0..argc) ("-ksp_type", "cg", "-log_view", ...),
 * which win over a case's petsc: section. Without signal handlers of PETSc's own (tessera's
 * stop handling keeps SIGTERM, SIGINT, SIGUSR1). Collective. A second call does nothing.
 * Errors: TSR_ERR_INPUT (built without PETSc: the message says how to get it; exit 2, so
 * tessera supervise does not retry it, or PETSc refused its options).
 * Matching call: tsr_implicit_finalize. */
tsr_err tsr_implicit_init(MPI_Comm comm, int argc, char *const *argv);

/* PetscFinalize (prints -log_view's summary when asked), before MPI_Finalize. Collective;
 * nothing when PETSc was not initialised by tsr_implicit_init. */
void tsr_implicit_finalize(void);

/* The method itself is tsr_method_implicit (solver/method.h), which the driver runs: PETSc
 * initialised without options when tsr_implicit_init was not called; res as tsr_run's: steps,
 * t_final, dt (the last step's), wall, norms and errors; final.h5, final.xmf, report.json (with
 * the solver's iterations and times), snapshots. Its errors: TSR_ERR_INPUT (a solve that
 * diverged: PETSc's reasons, the step and time; a PETSc option that nothing read; a build
 * without PETSc), those of tsr_run otherwise. */

#endif
