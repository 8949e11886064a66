/* Allen-Cahn: du/dt = eps^2 lap(u) + gamma (u - u^3).  p = {eps, gamma}, q[0] = eps^2. */
#ifndef TSR_MODEL_ALLEN_CAHN_H
#define TSR_MODEL_ALLEN_CAHN_H
#include "kernels/models/point.h"

TSR_HD static inline void tsr_allen_cahn_point(const tsr_point *pt, const tsr_cell_coef *k,
                                               double *F, tsr_point_jac *J) {
  const double u = pt->u[0];
  /* gamma multiplies the whole reaction, so gamma = 1 gives the bits of u - u^3 alone */
  F[0] = k->q[0] * pt->lap[0] + k->p[1] * (u - u * u * u);
  if (J) {
    tsr_point_jac_zero(J, 1, k->dim);
    J->du[0][0] = k->p[1] * (1.0 - 3.0 * u * u);
    J->dlap[0][0] = k->q[0];
  }
}
#endif
