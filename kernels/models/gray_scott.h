/* Gray-Scott reaction-diffusion:
 *   du/dt = Du lap(u) - u v^2 + F (1 - u),  dv/dt = Dv lap(v) + u v^2 - (F + k) v.
 * p = {Du, Dv, F, k}, q[0] = F + k. */
#ifndef TSR_MODEL_GRAY_SCOTT_H
#define TSR_MODEL_GRAY_SCOTT_H
#include "kernels/models/point.h"

TSR_HD static inline void tsr_gray_scott_point(const tsr_point *pt, const tsr_cell_coef *k,
                                               double *F, tsr_point_jac *J) {
  const double u = pt->u[0], v = pt->u[1];
  double uvv = u * v * v;
  F[0] = k->p[0] * pt->lap[0] - uvv + k->p[2] * (1.0 - u);
  F[1] = k->p[1] * pt->lap[1] + uvv - k->q[0] * v;
  if (J) {
    tsr_point_jac_zero(J, 2, k->dim);
    J->du[0][0] = -(v * v) - k->p[2];
    J->du[0][1] = -2.0 * u * v;
    J->du[1][0] = v * v;
    J->du[1][1] = 2.0 * u * v - k->q[0];
    J->dlap[0][0] = k->p[0];
    J->dlap[1][1] = k->p[1];
  }
}
#endif
