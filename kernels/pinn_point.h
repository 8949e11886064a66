/* One point of the PINN's loss (kernels/pinn.h), host + device from one source: its residuals
 * from the network's channels, its share of its term's loss, and dL/dU at its channels. */
#ifndef TSR_PINN_POINT_H
#define TSR_PINN_POINT_H

#include "kernels/models/all.h"
#include "kernels/models/point.h"
#include "kernels/pinn.h"

/* Channel ch of component c at point p, as double. */
TSR_HD static inline double tsr_pinn_ld(const tsr_pinn_loss_desc *d, const void *U, int c, int ch,
                                        int p) {
  size_t i = (size_t)c + (size_t)d->ncomp * ((size_t)ch * (size_t)d->npts + (size_t)p);
  return d->single ? (double)((const float *)U)[i] : ((const double *)U)[i];
}

TSR_HD static inline void tsr_pinn_st(const tsr_pinn_loss_desc *d, void *dU, int c, int ch,
                                      int p, double v) {
  size_t i = (size_t)c + (size_t)d->ncomp * ((size_t)ch * (size_t)d->npts + (size_t)p);
  if (d->single) ((float *)dU)[i] = (float)v;
  else ((double *)dU)[i] = v;
}

/* The term point p belongs to, or -1 (the periodic images are their term's too). */
TSR_HD static inline int tsr_pinn_term_of(const tsr_pinn_loss_desc *d, int p) {
  for (int k = 0; k < d->nterm; ++k) {
    const tsr_loss_term *t = &d->term[k];
    int n = t->kind == TSR_LOSS_PERIODIC ? 2 * t->count : t->count;
    if (p >= t->start && p < t->start + n) return k;
  }
  return -1;
}

/* The PDE's residual at point p, r_c = du/dt - F_c(u, grad u, lap u) - s_c (du/dt left out of a
 * steady model; s = T), and the model's partials J. */
TSR_HD static inline void tsr_pinn_residual(const tsr_pinn_loss_desc *d, const void *U,
                                            const double *T, int p, double *r,
                                            tsr_point_jac *J) {
  const int nc = d->ncomp;
  tsr_point pt;
  double F[TSR_MAX_COMP] = {0};
  for (int c = 0; c < nc; ++c) {
    pt.u[c] = tsr_pinn_ld(d, U, c, 0, p);
    pt.lap[c] = 0.0;
    for (int a = 0; a < 3; ++a) pt.g[c][a] = 0.0;
    for (int a = 0; a < d->nspace; ++a) pt.g[c][a] = tsr_pinn_ld(d, U, c, 1 + a, p);
    pt.lap[c] = tsr_pinn_ld(d, U, c, 1 + d->nd1, p);
  }
  tsr_model_point(d->model, &pt, &d->coef, F, J);
  for (int c = 0; c < nc; ++c) {
    double ut = d->timed ? tsr_pinn_ld(d, U, c, 1 + d->nspace, p) : 0.0;
    r[c] = ut - F[c] - T[c + nc * p];
  }
}

/* dL/dU at point p's channels from dL/dr_c = dr[c] of the residual (r_c = u_t - F_c - s), plus
 * extra dL/du (du0) and dL/d(du/dx_axis) (dg0), all stored (nothing accumulates in dU). */
TSR_HD static inline void tsr_pinn_residual_adjoint(const tsr_pinn_loss_desc *d, void *dU, int p,
                                                    const double *dr, const tsr_point_jac *J,
                                                    const double *du0, int axis,
                                                    const double *dg0) {
  const int nc = d->ncomp;
  for (int c = 0; c < nc; ++c)
    if (d->timed) tsr_pinn_st(d, dU, c, 1 + d->nspace, p, dr[c]);
  /* dL/d(input e) = -sum_c dr_c dF_c/d(input e) */
  for (int e = 0; e < nc; ++e) {
    double du = du0 ? du0[e] : 0.0, dl = 0.0;
    for (int c = 0; c < nc; ++c) {
      du = du - dr[c] * J->du[c][e];
      dl = dl - dr[c] * J->dlap[c][e];
    }
    tsr_pinn_st(d, dU, e, 0, p, du);
    for (int a = 0; a < d->nspace; ++a) {
      double dg = dg0 && a == axis ? dg0[e] : 0.0;
      for (int c = 0; c < nc; ++c) dg = dg - dr[c] * J->dg[c][e][a];
      tsr_pinn_st(d, dU, e, 1 + a, p, dg);
    }
    tsr_pinn_st(d, dU, e, 1 + d->nd1, p, dl);
  }
}

/* What interface point p sends its neighbour (kernels/pinn.h): value, outward flux (F[p] = 2
 * axis + side) and residual of each component into out[k * ncomp + c]. */
TSR_HD static inline void tsr_pinn_iface_point(const tsr_pinn_loss_desc *d, int p, const void *U,
                                               const double *T, const int *F, double *out) {
  const int nc = d->ncomp, axis = F[p] / 2;
  const double sign = F[p] % 2 ? 1.0 : -1.0;
  double r[TSR_MAX_COMP];
  tsr_point_jac J;
  tsr_pinn_residual(d, U, T, p, r, &J);
  for (int c = 0; c < nc; ++c) {
    out[c] = tsr_pinn_ld(d, U, c, 0, p);
    out[nc + c] = sign * tsr_pinn_ld(d, U, c, 1 + axis, p);
    out[2 * nc + c] = r[c];
  }
}

/* Point p's weighted squared residual (0 for a periodic image: its pair counts once, at the lo
 * point) and dL/dU at its channels, all written (zeros where nothing depends). */
TSR_HD static inline double tsr_pinn_point(const tsr_pinn_loss_desc *d, int p, const void *U,
                                           const double *T, const double *N, const int *F,
                                           void *dU) {
  const int K = tsr_pinn_channels(d), nc = d->ncomp;
  int k = tsr_pinn_term_of(d, p);
  const tsr_loss_term *t = k < 0 ? NULL : &d->term[k];
  /* a periodic pair is written by its lo point alone (the image's entries included), so no
   * two threads write one entry */
  if (t && t->kind == TSR_LOSS_PERIODIC && p - t->start >= t->count) return 0.0;
  for (int c = 0; c < nc; ++c)
    for (int ch = 0; ch < K; ++ch) {
      tsr_pinn_st(d, dU, c, ch, p, 0.0);
      if (t && t->kind == TSR_LOSS_PERIODIC) tsr_pinn_st(d, dU, c, ch, p + t->count, 0.0);
    }
  if (!t) return 0.0;
  const double w = t->weight / (double)t->count;
  double sum = 0.0;
  switch (t->kind) {
  case TSR_LOSS_PDE: {
    double r[TSR_MAX_COMP], dr[TSR_MAX_COMP];
    tsr_point_jac J;
    tsr_pinn_residual(d, U, T, p, r, &J);
    for (int c = 0; c < nc; ++c) {
      sum = sum + r[c] * r[c];
      dr[c] = 2.0 * w * r[c];
    }
    tsr_pinn_residual_adjoint(d, dU, p, dr, &J, NULL, 0, NULL);
    break;
  }
  case TSR_LOSS_INTERFACE: {
    /* value, flux and residual continuity against the neighbour's (constants) */
    const int q = p - d->if_start, axis = F[q] / 2;
    const double sign = F[q] % 2 ? 1.0 : -1.0;
    const double *nb = N + (size_t)q * TSR_PINN_IFACE_NV * nc;
    double r[TSR_MAX_COMP], dr[TSR_MAX_COMP], du[TSR_MAX_COMP], dg[TSR_MAX_COMP];
    tsr_point_jac J;
    tsr_pinn_residual(d, U, T, p, r, &J);
    for (int c = 0; c < nc; ++c) {
      double u = tsr_pinn_ld(d, U, c, 0, p), f = sign * tsr_pinn_ld(d, U, c, 1 + axis, p);
      double ev = u - 0.5 * (u + nb[c]), ef = f + nb[nc + c], er = r[c] - nb[2 * nc + c];
      sum = sum + d->wi[0] * ev * ev + d->wi[1] * ef * ef + d->wi[2] * er * er;
      /* d/du (u - (u + u')/2)^2 = u - (u + u')/2: the average's own half counts */
      du[c] = w * d->wi[0] * ev;
      dg[c] = 2.0 * w * d->wi[1] * ef * sign;
      dr[c] = 2.0 * w * d->wi[2] * er;
    }
    tsr_pinn_residual_adjoint(d, dU, p, dr, &J, du, axis, dg);
    break;
  }
  case TSR_LOSS_SLAB: {
    const double *nb = N + (size_t)(p - d->if_start) * TSR_PINN_IFACE_NV * nc;
    for (int c = 0; c < nc; ++c) {
      double r = tsr_pinn_ld(d, U, c, 0, p) - nb[c];
      sum = sum + r * r;
      tsr_pinn_st(d, dU, c, 0, p, 2.0 * w * r);
    }
    break;
  }
  case TSR_LOSS_DIRICHLET:
  case TSR_LOSS_INITIAL:
    for (int c = 0; c < nc; ++c) {
      double r = tsr_pinn_ld(d, U, c, 0, p) - T[c + nc * p];
      sum = sum + r * r;
      tsr_pinn_st(d, dU, c, 0, p, 2.0 * w * r);
    }
    break;
  case TSR_LOSS_NEUMANN: {
    double sign = t->side ? 1.0 : -1.0;
    for (int c = 0; c < nc; ++c) {
      double r = sign * tsr_pinn_ld(d, U, c, 1 + t->axis, p) - T[c + nc * p];
      sum = sum + r * r;
      tsr_pinn_st(d, dU, c, 1 + t->axis, p, 2.0 * w * r * sign);
    }
    break;
  }
  case TSR_LOSS_PERIODIC: {
    int q = p + t->count;
    for (int c = 0; c < nc; ++c) {
      double r0 = tsr_pinn_ld(d, U, c, 0, p) - tsr_pinn_ld(d, U, c, 0, q);
      double r1 = tsr_pinn_ld(d, U, c, 1 + t->axis, p) - tsr_pinn_ld(d, U, c, 1 + t->axis, q);
      sum = sum + r0 * r0 + r1 * r1;
      tsr_pinn_st(d, dU, c, 0, p, 2.0 * w * r0);
      tsr_pinn_st(d, dU, c, 0, q, -2.0 * w * r0);
      tsr_pinn_st(d, dU, c, 1 + t->axis, p, 2.0 * w * r1);
      tsr_pinn_st(d, dU, c, 1 + t->axis, q, -2.0 * w * r1);
    }
    break;
  }
  default: break;
  }
  return w * sum;
}

#endif
