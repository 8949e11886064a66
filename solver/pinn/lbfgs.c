/* L-BFGS after Adam (pinn.lbfgs): the two-loop recursion over the last `history` pairs of
 * steps and gradient changes, a backtracking line search on the Armijo condition, in double
 * on the host (the parameters are tens of thousands at most; each evaluation of the loss and
 * its gradient runs on the engine's backend). Deterministic: the same bits every run.
 *
 * On several ranks (exchange) each rank runs its own L-BFGS on its own network: an iteration
 * begins with the interface exchange at the current parameters, and the line search and the
 * pair (s, y) of that iteration see the neighbours' values frozen there, so each iteration
 * minimises one fixed objective (this rank's loss, its neighbours' values constant, as in
 * every gradient of the XPINN/cPINN terms) and its curvature pair is of that objective. The
 * ranks step in lockstep (one exchange an iteration) but search their lines alone: no
 * collective beyond the exchange. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver/pinn/lbfgs.h"

static double dot(const double *a, const double *b, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

/* The loss (sum of the terms) and its gradient at theta; terms gets the terms. */
static tsr_err eval(tsr_pinn_engine *e, const double *theta, int nterm, double *terms,
                    double *f, double *g) {
  TSR_CALL(tsr_pinn_engine_set_theta(e, theta));
  TSR_CALL(tsr_pinn_engine_loss_grad(e, terms, g));
  *f = 0.0;
  for (int k = 0; k < nterm; ++k) *f += terms[k];
  return TSR_OK;
}

struct tsr_pinn_lbfgs {
  tsr_pinn_engine *e;
  size_t n;
  int m, count, head, nterm;
  double *theta, *g, *d, *t2, *g2, *alpha, *rho;
  double *s, *y; /* m x n each, a ring */
  double f;
  double ft[TSR_PINN_MAX_TERMS]; /* the terms at theta */
  int started;   /* f and g are theta's */
  int have;      /* theta holds the parameters (else the first step reads the engine's) */
  int exchange;
};

tsr_err tsr_pinn_lbfgs_create(tsr_pinn_engine *e, size_t n, int m, int nterm, int exchange,
                              tsr_pinn_lbfgs **out) {
  *out = NULL;
  tsr_pinn_lbfgs *l = calloc(1, sizeof *l);
  TSR_CHECK(l, TSR_ERR_MEMORY, "out of memory for L-BFGS");
  l->e = e;
  l->n = n;
  l->m = m;
  l->nterm = nterm;
  l->exchange = exchange;
  size_t need = (5 + 2 * (size_t)m) * n + 2 * (size_t)m;
  double *a = calloc(need, sizeof *a);
  if (!a) {
    free(l);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "L-BFGS needs %zu bytes; lower pinn.lbfgs.history",
                       need * sizeof *a);
  }
  l->theta = a;
  l->g = a + n;
  l->d = a + 2 * n;
  l->t2 = a + 3 * n;
  l->g2 = a + 4 * n;
  l->s = a + 5 * n;
  l->y = l->s + (size_t)m * n;
  l->alpha = l->y + (size_t)m * n;
  l->rho = l->alpha + m;
  *out = l;
  return TSR_OK;
}

void tsr_pinn_lbfgs_destroy(tsr_pinn_lbfgs **pl) {
  if (!pl || !*pl) return;
  free((*pl)->theta);
  free(*pl);
  *pl = NULL;
}

/* d = -H g by the two-loop recursion (H: the pairs' inverse-Hessian estimate, scaled by
 * s.y / y.y of the newest pair). */
static void direction(tsr_pinn_lbfgs *l) {
  size_t n = l->n;
  for (size_t i = 0; i < n; ++i) l->d[i] = -l->g[i];
  for (int k = 0; k < l->count; ++k) {
    int j = (l->head - 1 - k + l->m) % l->m;
    const double *s = l->s + (size_t)j * n, *y = l->y + (size_t)j * n;
    l->alpha[j] = l->rho[j] * dot(s, l->d, n);
    for (size_t i = 0; i < n; ++i) l->d[i] -= l->alpha[j] * y[i];
  }
  if (l->count) {
    int j = (l->head - 1 + l->m) % l->m;
    const double *s = l->s + (size_t)j * n, *y = l->y + (size_t)j * n;
    double gamma = dot(s, y, n) / dot(y, y, n);
    for (size_t i = 0; i < n; ++i) l->d[i] *= gamma;
  }
  for (int k = l->count - 1; k >= 0; --k) {
    int j = (l->head - 1 - k + l->m) % l->m;
    const double *s = l->s + (size_t)j * n, *y = l->y + (size_t)j * n;
    double b = l->rho[j] * dot(y, l->d, n);
    for (size_t i = 0; i < n; ++i) l->d[i] += s[i] * (l->alpha[j] - b);
  }
}

tsr_err tsr_pinn_lbfgs_step(tsr_pinn_lbfgs *l, double *terms, double *step, int *done) {
  size_t n = l->n;
  double tt[TSR_PINN_MAX_TERMS];
  *done = 0;
  if (!l->have) {
    TSR_CALL(tsr_pinn_engine_get_state(l->e, l->theta, NULL, NULL));
    l->have = 1;
  }
  if (l->exchange) {
    /* this iteration's objective: the neighbours' values at their current parameters */
    TSR_CALL(tsr_pinn_engine_set_theta(l->e, l->theta));
    TSR_CALL(tsr_pinn_engine_loss_grad_exchange(l->e, l->ft, l->g));
    l->f = 0.0;
    for (int k = 0; k < l->nterm; ++k) l->f += l->ft[k];
    l->started = 1;
  } else if (!l->started) {
    TSR_CALL(eval(l->e, l->theta, l->nterm, l->ft, &l->f, l->g));
    l->started = 1;
  }
  direction(l);
  double gd = dot(l->g, l->d, n);
  if (!(gd < 0.0)) { /* not a descent direction: forget the pairs, go down the gradient */
    l->count = 0;
    for (size_t i = 0; i < n; ++i) l->d[i] = -l->g[i];
    gd = dot(l->g, l->d, n);
  }
  /* the first step has no curvature to scale it: at most a unit change of the parameters */
  double t = l->count ? 1.0 : fmin(1.0, 1.0 / sqrt(dot(l->g, l->g, n)));
  double f2 = NAN;
  int ok = 0;
  for (int tries = 0; tries < 30 && !ok; ++tries) {
    for (size_t i = 0; i < n; ++i) l->t2[i] = l->theta[i] + t * l->d[i];
    TSR_CALL(eval(l->e, l->t2, l->nterm, tt, &f2, l->g2));
    if (isfinite(f2) && f2 <= l->f + 1e-4 * t * gd) ok = 1;
    else t *= 0.5;
  }
  if (!ok) { /* no decrease along the direction: converged as far as this precision goes */
    TSR_CALL(tsr_pinn_engine_set_theta(l->e, l->theta));
    l->count = 0;
    l->head = 0;
    *done = 1;
    *step = 0.0;
    memcpy(terms, l->ft, (size_t)l->nterm * sizeof *terms);
    return TSR_OK;
  }
  double *s = l->s + (size_t)l->head * n, *y = l->y + (size_t)l->head * n;
  for (size_t i = 0; i < n; ++i) {
    s[i] = l->t2[i] - l->theta[i];
    y[i] = l->g2[i] - l->g[i];
  }
  double sy = dot(s, y, n);
  if (sy > 1e-12 * sqrt(dot(s, s, n) * dot(y, y, n))) { /* keep only curvature it can use */
    l->rho[l->head] = 1.0 / sy;
    l->head = (l->head + 1) % l->m;
    if (l->count < l->m) ++l->count;
  }
  memcpy(l->theta, l->t2, n * sizeof *l->theta);
  memcpy(l->g, l->g2, n * sizeof *l->g);
  l->f = f2;
  memcpy(l->ft, tt, (size_t)l->nterm * sizeof *tt);
  memcpy(terms, tt, (size_t)l->nterm * sizeof *terms);
  *step = t;
  return TSR_OK;
}

void tsr_pinn_lbfgs_get(const tsr_pinn_lbfgs *l, double *theta, double *s, double *y,
                        double *rho, int *count) {
  size_t n = l->n;
  memcpy(theta, l->theta, n * sizeof *theta);
  memset(s, 0, (size_t)l->m * n * sizeof *s);
  memset(y, 0, (size_t)l->m * n * sizeof *y);
  memset(rho, 0, (size_t)l->m * sizeof *rho);
  for (int k = 0; k < l->count; ++k) { /* oldest first */
    int j = (l->head - l->count + k + l->m) % l->m;
    memcpy(s + (size_t)k * n, l->s + (size_t)j * n, n * sizeof *s);
    memcpy(y + (size_t)k * n, l->y + (size_t)j * n, n * sizeof *y);
    rho[k] = l->rho[j];
  }
  *count = l->count;
}

tsr_err tsr_pinn_lbfgs_set(tsr_pinn_lbfgs *l, const double *theta, const double *s,
                           const double *y, const double *rho, int count) {
  TSR_CHECK(count >= 0 && count <= l->m, TSR_ERR_INPUT, "L-BFGS state with %d pairs, at most %d "
            "(pinn.lbfgs.history)", count, l->m);
  size_t n = l->n;
  memcpy(l->theta, theta, n * sizeof *theta);
  memcpy(l->s, s, (size_t)count * n * sizeof *s);
  memcpy(l->y, y, (size_t)count * n * sizeof *y);
  memcpy(l->rho, rho, (size_t)count * sizeof *rho);
  l->count = count;
  l->head = count % l->m;
  l->have = 1;
  l->started = 0;
  return TSR_OK;
}
