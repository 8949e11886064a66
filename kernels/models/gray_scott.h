/* Gray-Scott reaction-diffusion:
 *   du/dt = Du lap(u) - u v^2 + F (1 - u),  dv/dt = Dv lap(v) + u v^2 - (F + k) v.
 * p = {Du, Dv, F, k}, q[0] = F + k. */
#ifndef TSR_MODEL_GRAY_SCOTT_H
#define TSR_MODEL_GRAY_SCOTT_H
#include "kernels/models/cell.h"

TSR_HD static inline void tsr_gray_scott_rhs(const double *u, const tsr_cell_coef *k, double *r) {
  const double *v = u + k->scomp;
  double uvv = u[0] * v[0] * v[0];
  r[0] = k->p[0] * tsr_cell_lap(u, k) - uvv + k->p[2] * (1.0 - u[0]);
  r[1] = k->p[1] * tsr_cell_lap(v, k) + uvv - k->q[0] * v[0];
}
#endif
