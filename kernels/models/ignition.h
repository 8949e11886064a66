/* ignition: a reaction front with a stiff rate that each cell sub-steps on its own.
 *
 *   du/dt = kappa lap(u) + A (1 - u) s^2,   s = max(0, (u - theta) / (1 - theta))
 *
 * u is a progress variable (0 cold, 1 burnt); below the ignition threshold theta nothing
 * reacts (ignition-temperature kinetics: no cold-boundary creep, so cold cells cost one
 * sub-step), and the rate peaks inside the front. p = {kappa, A, theta, delta, nmax},
 * q[0] = 1 / (1 - theta).
 *
 * Over the stage's step k->dt each cell integrates du/dt = d + A (1 - u) s^2 with the diffusion
 * d = kappa lap(u) frozen at the stage's input, in sub-steps: each sub-step is as long as lets
 * u change by at most delta at its current rate |d + (1 - u) g| (so a cell heated past theta
 * during the step sees its reaction start), the last one takes what is left, and the nmax-th
 * takes the rest of the step. A sub-step is linearly implicit in (1 - u),
 * u' = (u + h d + h g) / (1 + h g) with g = A s^2, so however long it is the reaction never
 * carries u past the burnt state. The stage then sees the mean rate (u(dt) - u) / dt,
 * which keeps diffusion explicit (dt: auto is its limit) and absorbs the reaction's stiffness
 * in the sub-steps: cold and burnt cells take one, cells in the front tens.
 *
 * The count depends only on the cell's stencil values, the parameters and dt, computed with
 * + - * / alone (no libm), so every decomposition and both backends give the same bits.
 * The coupling of reaction and diffusion is first order in dt (the rate over the step). */
#ifndef TSR_MODEL_IGNITION_H
#define TSR_MODEL_IGNITION_H
#include "kernels/models/point.h"

/* g(u) = A s^2: the reaction rate is (1 - u) g(u). */
TSR_HD static inline double tsr_ignition_g(double u, const tsr_cell_coef *k) {
  double s = (u - k->p[2]) * k->q[0];
  if (!(s > 0.0)) return 0.0;
  if (s > 1.0) s = 1.0;
  return k->p[1] * (s * s);
}

/* u after the step k->dt from u0 under frozen diffusion d; *count gets the sub-steps taken
 * (1 .. nmax; 0 when k->dt is 0). Pure: a function of its arguments alone. */
TSR_HD static inline double tsr_ignition_react(double u0, double d, const tsr_cell_coef *k,
                                               int *count) {
  const double delta = k->p[3];
  const int nmax = (int)k->p[4];
  double u = u0, left = k->dt;
  int n = 0;
  while (left > 0.0) {
    double g = tsr_ignition_g(u, k);
    double rate = d + (1.0 - u) * g;
    if (rate < 0.0) rate = -rate;
    double h = left;
    ++n;
    if (n < nmax && rate * left > delta) h = delta / rate;
    u = (u + h * d + h * g) / (1.0 + h * g);
    left = n < nmax && h < left ? left - h : 0.0;
  }
  *count = n;
  return u;
}

/* The PDE's pointwise F = kappa lap(u) + (1 - u) g(u), without sub-steps: what methods that
 * take the PDE itself see (a PINN's residual, an implicit method's Jacobian). g is piecewise in
 * s: 0 for s <= 0, A s^2 inside, A for s > 1, and its derivative is taken on each piece. */
TSR_HD static inline void tsr_ignition_point(const tsr_point *pt, const tsr_cell_coef *k,
                                             double *F, tsr_point_jac *J) {
  const double u = pt->u[0];
  const double g = tsr_ignition_g(u, k);
  F[0] = k->p[0] * pt->lap[0] + (1.0 - u) * g;
  if (J) {
    const double s = (u - k->p[2]) * k->q[0];
    const double dg = s > 0.0 && !(s > 1.0) ? 2.0 * k->p[1] * s * k->q[0] : 0.0;
    tsr_point_jac_zero(J, 1, k->dim);
    J->du[0][0] = (1.0 - u) * dg - g;
    J->dlap[0][0] = k->p[0];
  }
}

/* The explicit stages' right-hand side: the mean rate of the sub-stepped step (above). */
TSR_HD static inline void tsr_ignition_rhs(const double *u, const tsr_cell_coef *k, double *r) {
  double d = k->p[0] * tsr_cell_lap(u, k);
  int n;
  double u1 = tsr_ignition_react(u[0], d, k, &n);
  r[0] = (u1 - u[0]) / k->dt;
}

/* Sub-steps the cell at u takes in a stage of k->dt (the same as tsr_ignition_rhs takes):
 * 1 for cold and burnt cells, up to nmax in the front. */
TSR_HD static inline int tsr_ignition_work(const double *u, const tsr_cell_coef *k) {
  int n;
  (void)tsr_ignition_react(u[0], k->p[0] * tsr_cell_lap(u, k), k, &n);
  return n;
}
#endif
