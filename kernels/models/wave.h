/* wave as a first-order system: du/dt = v, dv/dt = c^2 lap(u).  p[0] = c, q[0] = c^2. */
#ifndef TSR_MODEL_WAVE_H
#define TSR_MODEL_WAVE_H
#include "kernels/models/point.h"

TSR_HD static inline void tsr_wave_point(const tsr_point *pt, const tsr_cell_coef *k, double *F,
                                         tsr_point_jac *J) {
  F[0] = pt->u[1];
  F[1] = k->q[0] * pt->lap[0];
  if (J) {
    tsr_point_jac_zero(J, 2, k->dim);
    J->du[0][1] = 1.0;
    J->dlap[1][0] = k->q[0];
  }
}
#endif
