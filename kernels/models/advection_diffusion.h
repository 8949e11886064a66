/* advection_diffusion: du/dt = -v.grad(u) + kappa lap(u), centred in space.
 * p = {kappa, vx, vy, vz}. */
#ifndef TSR_MODEL_ADVECTION_DIFFUSION_H
#define TSR_MODEL_ADVECTION_DIFFUSION_H
#include "kernels/models/point.h"

TSR_HD static inline void tsr_advection_diffusion_point(const tsr_point *pt,
                                                        const tsr_cell_coef *k, double *F,
                                                        tsr_point_jac *J) {
  /* the explicit method's bits: v.grad(u) summed x, y, z, then subtracted from the diffusion */
  double adv = k->p[1] * pt->g[0][0];
  adv = adv + k->p[2] * pt->g[0][1];
  if (k->dim == 3) adv = adv + k->p[3] * pt->g[0][2];
  F[0] = k->p[0] * pt->lap[0] - adv;
  if (J) {
    tsr_point_jac_zero(J, 1, k->dim);
    for (int d = 0; d < k->dim; ++d) J->dg[0][0][d] = -k->p[1 + d];
    J->dlap[0][0] = k->p[0];
  }
}
#endif
