/* Allen-Cahn: du/dt = eps^2 lap(u) + u - u^3.  p[0] = eps, q[0] = eps^2. */
#ifndef TSR_MODEL_ALLEN_CAHN_H
#define TSR_MODEL_ALLEN_CAHN_H
#include "kernels/models/cell.h"

TSR_HD static inline void tsr_allen_cahn_rhs(const double *u, const tsr_cell_coef *k, double *r) {
  r[0] = k->q[0] * tsr_cell_lap(u, k) + (u[0] - u[0] * u[0] * u[0]);
}
#endif
