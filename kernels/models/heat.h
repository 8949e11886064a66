/* heat: du/dt = kappa lap(u).  p[0] = kappa. */
#ifndef TSR_MODEL_HEAT_H
#define TSR_MODEL_HEAT_H
#include "kernels/models/cell.h"

TSR_HD static inline void tsr_heat_rhs(const double *u, const tsr_cell_coef *k, double *r) {
  r[0] = k->p[0] * tsr_cell_lap(u, k);
}
#endif
