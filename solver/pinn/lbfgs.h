/* L-BFGS on the PINN engine's parameters (solver/pinn/lbfgs.c). Private to solver/pinn/. */
#ifndef TSR_PINN_LBFGS_H
#define TSR_PINN_LBFGS_H

#include "solver/pinn/engine.h"

typedef struct tsr_pinn_lbfgs tsr_pinn_lbfgs;

/* For the engine's n parameters, keeping m pairs; nterm: the loss's terms. Errors:
 * TSR_ERR_MEMORY. */
tsr_err tsr_pinn_lbfgs_create(tsr_pinn_engine *e, size_t n, int m, int nterm,
                              tsr_pinn_lbfgs **out);
void tsr_pinn_lbfgs_destroy(tsr_pinn_lbfgs **l);

/* One iteration from the engine's parameters (the first call reads them): the engine is left
 * at the accepted point; terms gets its loss terms, step the line search's step. *done: no
 * step lowered the loss (the parameters are left where they were). Errors: the engine's. */
tsr_err tsr_pinn_lbfgs_step(tsr_pinn_lbfgs *l, double *terms, double *step, int *done);

#endif
