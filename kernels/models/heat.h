/* heat: du/dt = kappa lap(u).  p[0] = kappa. */
#ifndef TSR_MODEL_HEAT_H
#define TSR_MODEL_HEAT_H
#include "kernels/models/point.h"

TSR_HD static inline void tsr_heat_point(const tsr_point *pt, const tsr_cell_coef *k, double *F,
                                         tsr_point_jac *J) {
  F[0] = k->p[0] * pt->lap[0];
  if (J) {
    tsr_point_jac_zero(J, 1, k->dim);
    J->dlap[0][0] = k->p[0];
  }
}
#endif
