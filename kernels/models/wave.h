/* wave as a first-order system: du/dt = v, dv/dt = c^2 lap(u).  p[0] = c, q[0] = c^2. */
#ifndef TSR_MODEL_WAVE_H
#define TSR_MODEL_WAVE_H
#include "kernels/models/cell.h"

TSR_HD static inline void tsr_wave_rhs(const double *u, const tsr_cell_coef *k, double *r) {
  r[0] = u[k->scomp];
  r[1] = k->q[0] * tsr_cell_lap(u, k);
}
#endif
