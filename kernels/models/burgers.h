/* burgers (viscous): du/dt = nu lap(u) - u sum_d du/dx_d over the space axes.  p[0] = nu.
 * One scalar carried along the diagonal (the usual 1D Burgers' equation written in 2D/3D); no
 * explicit stage: the PINN solves it. */
#ifndef TSR_MODEL_BURGERS_H
#define TSR_MODEL_BURGERS_H
#include "kernels/models/point.h"

TSR_HD static inline void tsr_burgers_point(const tsr_point *pt, const tsr_cell_coef *k,
                                            double *F, tsr_point_jac *J) {
  const double u = pt->u[0];
  double div = pt->g[0][0];
  for (int d = 1; d < k->dim; ++d) div = div + pt->g[0][d];
  F[0] = k->p[0] * pt->lap[0] - u * div;
  if (J) {
    tsr_point_jac_zero(J, 1, k->dim);
    J->du[0][0] = -div;
    for (int d = 0; d < k->dim; ++d) J->dg[0][0][d] = -u;
    J->dlap[0][0] = k->p[0];
  }
}
#endif
