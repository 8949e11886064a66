/* advection_diffusion: du/dt = -v.grad(u) + kappa lap(u), centred in space.
 * p = {kappa, vx, vy, vz}. */
#ifndef TSR_MODEL_ADVECTION_DIFFUSION_H
#define TSR_MODEL_ADVECTION_DIFFUSION_H
#include "kernels/models/cell.h"

TSR_HD static inline void tsr_advection_diffusion_rhs(const double *u, const tsr_cell_coef *k,
                                                      double *r) {
  double adv = k->p[1] * tsr_cell_d1(u, 1, k->ih2x[0]);
  adv = adv + k->p[2] * tsr_cell_d1(u, k->sy, k->ih2x[1]);
  if (k->dim == 3) adv = adv + k->p[3] * tsr_cell_d1(u, k->sz, k->ih2x[2]);
  r[0] = k->p[0] * tsr_cell_lap(u, k) - adv;
}
#endif
