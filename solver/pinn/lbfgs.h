/* L-BFGS on the PINN engine's parameters (solver/pinn/lbfgs.c). Private to solver/pinn/. */
#ifndef TSR_PINN_LBFGS_H
#define TSR_PINN_LBFGS_H

#include "solver/pinn/engine.h"

typedef struct tsr_pinn_lbfgs tsr_pinn_lbfgs;

/* For the engine's n parameters, keeping m pairs; nterm: the loss's terms. exchange: the
 * engine has an interface exchange (a decomposed run): each iteration then begins with one
 * evaluation that exchanges the interface values at the current parameters (collective with
 * the neighbours, which must step as often), and its line search keeps those values fixed, so
 * each rank minimises its own loss with its neighbours' values frozen for the iteration
 * (README, PINN method, On several ranks). Errors: TSR_ERR_MEMORY. */
tsr_err tsr_pinn_lbfgs_create(tsr_pinn_engine *e, size_t n, int m, int nterm, int exchange,
                              tsr_pinn_lbfgs **out);
void tsr_pinn_lbfgs_destroy(tsr_pinn_lbfgs **l);

/* One iteration from the engine's parameters (the first call reads them): the engine is left
 * at the accepted point; terms gets its loss terms, step the line search's step. *done: no
 * step lowered the loss (the parameters are left where they were, the pairs are forgotten;
 * terms gets the loss there). Errors: the engine's. */
tsr_err tsr_pinn_lbfgs_step(tsr_pinn_lbfgs *l, double *terms, double *step, int *done);

/* The state for a checkpoint (after a step; host doubles): theta (n: the parameters in double,
 * which a float32 engine holds rounded), s and y (m x n each, oldest pair first; rows past
 * *count are zero), rho (m), *count pairs held. The rest (the loss and gradient at theta) is
 * evaluated again from theta with the same bits. */
void tsr_pinn_lbfgs_get(const tsr_pinn_lbfgs *l, double *theta, double *s, double *y,
                        double *rho, int *count);

/* Puts that state back before the first step (the engine's parameters are set to theta there).
 * Errors: TSR_ERR_INPUT (count out of range). */
tsr_err tsr_pinn_lbfgs_set(tsr_pinn_lbfgs *l, const double *theta, const double *s,
                           const double *y, const double *rho, int count);

#endif
