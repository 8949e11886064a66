/* The models' pointwise form (kernels/models/point.h, all.h): every model's J against central
 * differences of its F, every entry a model must write written, the needs mask sufficient (the
 * inputs it leaves out never reach F), the explicit stages' right-hand side the same bits as F
 * on the stencil's point, and F the same operations as the stencil right-hand sides the models
 * had before the pointwise form (the explicit method's bits). One process. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "kernels/stage.h"

static uint64_t g_rng = 0x243f6a8885a308d3ull;
static double uniform(void) {
  g_rng ^= g_rng >> 12;
  g_rng ^= g_rng << 25;
  g_rng ^= g_rng >> 27;
  return (double)((g_rng * 0x2545f4914f6cdd1dull) >> 11) * (1.0 / 9007199254740992.0);
}
static double between(double a, double b) { return a + (b - a) * uniform(); }

/* Coefficients of model m in dim dimensions on the 3x3(x3) stencil block of stencil() (strides
 * 1, 3, 9; components 27 apart), with parameters that make every term count: the defaults of
 * some are tiny (gray_scott's diffusivities) or zero (advection's vy, vz). */
static tsr_cell_coef coef(int m, int dim) {
  double p[TSR_MAX_MODEL_PARAMS] = {0};
  for (int i = 0; i < tsr_models[m].nparam; ++i) p[i] = between(0.2, 1.0);
  if (m == TSR_MODEL_ALLEN_CAHN && uniform() < 0.5) p[1] = between(1.0, 3.0);
  if (m == TSR_MODEL_IGNITION) {
    p[1] = between(1.0, 50.0); /* A */
    p[2] = between(0.05, 0.5); /* theta */
    p[4] = 10;                 /* nmax */
  }
  const double h[3] = {between(0.01, 0.1), between(0.01, 0.1), between(0.01, 0.1)};
  const tsr_box b = {{0, 0, 0}, {3, 3, dim == 3 ? 3 : 1}};
  tsr_field *f = NULL;
  assert_int_equal(tsr_field_create(dim, &b, 1, tsr_models[m].ncomp, &f), TSR_OK);
  tsr_cell_coef k;
  tsr_stage_coef_init(&k, m, p, h, f);
  tsr_field_destroy(&f);
  k.sy = 3;
  k.sz = 9;
  k.scomp = 27;
  k.dt = between(1e-3, 1e-2);
  return k;
}

/* A point away from ignition's kinks (s = 0 and s = 1, where g' jumps). */
static tsr_point random_point(int m, const tsr_cell_coef *k) {
  tsr_point pt;
  for (int c = 0; c < TSR_MAX_COMP; ++c) {
    pt.u[c] = between(-1.0, 1.0);
    for (int d = 0; d < 3; ++d) pt.g[c][d] = between(-1.0, 1.0);
    pt.lap[c] = between(-1.0, 1.0);
  }
  if (m == TSR_MODEL_IGNITION) {
    double s;
    do {
      pt.u[0] = between(-0.2, 1.2);
      s = (pt.u[0] - k->p[2]) * k->q[0];
    } while (fabs(s) < 1e-3 || fabs(s - 1.0) < 1e-3);
  }
  return pt;
}

/* Each input of F in turn, by address; *n gets their count. */
static int inputs(tsr_point *pt, int ncomp, int dim, double **x, char (*name)[24]) {
  int n = 0;
  for (int e = 0; e < ncomp; ++e) {
    snprintf(name[n], sizeof name[n], "u[%d]", e);
    x[n++] = &pt->u[e];
    for (int d = 0; d < dim; ++d) {
      snprintf(name[n], sizeof name[n], "g[%d][%d]", e, d);
      x[n++] = &pt->g[e][d];
    }
    snprintf(name[n], sizeof name[n], "lap[%d]", e);
    x[n++] = &pt->lap[e];
  }
  return n;
}

/* J's entry of output c and input number i, in the order inputs() lists them. */
static double jac_entry(const tsr_point_jac *J, int c, int i, int dim) {
  const int per = dim + 2, e = i / per, r = i % per;
  if (r == 0) return J->du[c][e];
  if (r <= dim) return J->dg[c][e][r - 1];
  return J->dlap[c][e];
}

/* dF/d(input) by central differences of step 1e-6 max(1, |x|): truncation about 1e-12 times
 * F''' and rounding about 1e-10 |F|, far below the tolerance; the error is relative to |J|,
 * or absolute where |J| < 1 (a zero partial must come out exactly zero: a perturbation of an
 * input F ignores leaves F's bits alone). */
static void jacobian_matches_differences(void **state) {
  (void)state;
  for (int m = 0; m < TSR_MODEL_COUNT; ++m) {
    const int nc = tsr_models[m].ncomp;
    double worst = 0.0;
    for (int dim = 2; dim <= 3; ++dim)
      for (int trial = 0; trial < 200; ++trial) {
        const tsr_cell_coef k = coef(m, dim);
        tsr_point pt = random_point(m, &k);
        tsr_point_jac J;
        memset(&J, 0xff, sizeof J); /* NaN: an entry the model leaves unwritten fails below */
        double F[TSR_MAX_COMP], F0[TSR_MAX_COMP];
        tsr_model_point(m, &pt, &k, F, &J);
        tsr_model_point(m, &pt, &k, F0, NULL);
        assert_memory_equal(F, F0, nc * sizeof F[0]); /* J's work leaves F's bits alone */
        double *x[TSR_MAX_COMP * 5];
        char name[TSR_MAX_COMP * 5][24];
        const int n = inputs(&pt, nc, dim, x, name);
        for (int i = 0; i < n; ++i) {
          const double x0 = *x[i], h = 1e-6 * (fabs(x0) > 1.0 ? fabs(x0) : 1.0);
          double Fp[TSR_MAX_COMP] = {0}, Fm[TSR_MAX_COMP] = {0};
          *x[i] = x0 + h;
          tsr_model_point(m, &pt, &k, Fp, NULL);
          *x[i] = x0 - h;
          tsr_model_point(m, &pt, &k, Fm, NULL);
          *x[i] = x0;
          for (int c = 0; c < nc; ++c) {
            const double j = jac_entry(&J, c, i, dim), fd = (Fp[c] - Fm[c]) / (2.0 * h);
            const double err = fabs(j - fd) / (fabs(j) > 1.0 ? fabs(j) : 1.0);
            if (!(err <= 1e-7))
              fail_msg("model %s %dD: dF[%d]/d%s = %.17g, differences give %.17g (error %.3g)",
                       tsr_models[m].name, dim, c, name[i], j, fd, err);
            if (err > worst) worst = err;
          }
        }
      }
    printf("%-20s J vs central differences: worst error %.2e (2D, 3D, 200 points each)\n",
           tsr_models[m].name, worst);
  }
}

/* A random stencil block: nc components of 27 values, the centre at 13. */
static void stencil(double *w, int nc) {
  for (int i = 0; i < nc * 27; ++i) w[i] = between(-1.0, 1.0);
}

/* The explicit stages' right-hand side is F on the stencil's point, bit for bit, whatever the
 * fill leaves out of the point (NaN there must not reach F). Ignition's stages take the mean
 * rate of the sub-stepped reaction instead (kernels/models/ignition.h), so it is left out. */
static void rhs_is_point_on_stencil(void **state) {
  (void)state;
  for (int m = 0; m < TSR_MODEL_COUNT; ++m) {
    if (!(tsr_models[m].methods & TSR_METHODS_EXPLICIT) || m == TSR_MODEL_IGNITION) continue;
    const int nc = tsr_models[m].ncomp;
    for (int dim = 2; dim <= 3; ++dim)
      for (int trial = 0; trial < 500; ++trial) {
        const tsr_cell_coef k = coef(m, dim);
        double w[TSR_MAX_COMP * 27], r[TSR_MAX_COMP], F[TSR_MAX_COMP];
        stencil(w, nc);
        tsr_model_rhs(m, w + 13, &k, r);
        tsr_point pt;
        memset(&pt, 0xff, sizeof pt);
        tsr_model_point_fill(m, w + 13, &k, &pt);
        tsr_model_point(m, &pt, &k, F, NULL);
        assert_memory_equal(r, F, nc * sizeof r[0]);
        for (int c = 0; c < nc; ++c) assert_true(isfinite(F[c]));
      }
  }
}

/* The stencil right-hand sides as the models wrote them before the pointwise form: F on the
 * stencil's point must be these operations in this order (contraction is off), so that the
 * explicit method's results keep their bits. */
static double lap(const double *p, const tsr_cell_coef *k) { return tsr_cell_lap(p, k); }
static double d1(const double *p, ptrdiff_t s, double ih2x) { return tsr_cell_d1(p, s, ih2x); }
static void legacy_rhs(int m, const double *u, const tsr_cell_coef *k, double *r) {
  switch (m) {
  case TSR_MODEL_HEAT: r[0] = k->p[0] * lap(u, k); break;
  case TSR_MODEL_ADVECTION_DIFFUSION: {
    double adv = k->p[1] * d1(u, 1, k->ih2x[0]);
    adv = adv + k->p[2] * d1(u, k->sy, k->ih2x[1]);
    if (k->dim == 3) adv = adv + k->p[3] * d1(u, k->sz, k->ih2x[2]);
    r[0] = k->p[0] * lap(u, k) - adv;
    break;
  }
  case TSR_MODEL_WAVE:
    r[0] = u[k->scomp];
    r[1] = k->q[0] * lap(u, k);
    break;
  case TSR_MODEL_GRAY_SCOTT: {
    const double *v = u + k->scomp;
    double uvv = u[0] * v[0] * v[0];
    r[0] = k->p[0] * lap(u, k) - uvv + k->p[2] * (1.0 - u[0]);
    r[1] = k->p[1] * lap(v, k) + uvv - k->q[0] * v[0];
    break;
  }
  case TSR_MODEL_ALLEN_CAHN: r[0] = k->q[0] * lap(u, k) + (u[0] - u[0] * u[0] * u[0]); break;
  case TSR_MODEL_IGNITION: /* its pointwise form, tsr_ignition_rhs_point */
    r[0] = k->p[0] * lap(u, k) + (1.0 - u[0]) * tsr_ignition_g(u[0], k);
    break;
  default: break;
  }
}

static void point_keeps_legacy_bits(void **state) {
  (void)state;
  for (int m = 0; m < TSR_MODEL_COUNT; ++m) {
    if (m == TSR_MODEL_POISSON || m == TSR_MODEL_BURGERS) continue; /* new: no earlier form */
    const int nc = tsr_models[m].ncomp;
    for (int dim = 2; dim <= 3; ++dim)
      for (int trial = 0; trial < 500; ++trial) {
        tsr_cell_coef k = coef(m, dim);
        if (m == TSR_MODEL_ALLEN_CAHN) k.p[1] = 1.0; /* the earlier form is gamma = 1 */
        double w[TSR_MAX_COMP * 27], r[TSR_MAX_COMP], F[TSR_MAX_COMP];
        stencil(w, nc);
        if (m == TSR_MODEL_IGNITION) /* values across the ignition threshold */
          for (int i = 0; i < 27; ++i) w[i] = between(0.0, 1.0);
        legacy_rhs(m, w + 13, &k, r);
        tsr_point pt;
        tsr_model_point_fill(m, w + 13, &k, &pt);
        tsr_model_point(m, &pt, &k, F, NULL);
        assert_memory_equal(r, F, nc * sizeof r[0]);
      }
  }
}

/* The table: the PINN-only models have no stage and no explicit limit; poisson is steady. */
static void table_methods(void **state) {
  (void)state;
  for (int m = 0; m < TSR_MODEL_COUNT; ++m) {
    const tsr_model_info *mi = &tsr_models[m];
    assert_true(mi->methods != 0);
    assert_true(mi->ncomp == tsr_model_ncomp(m));
    const double p[TSR_MAX_MODEL_PARAMS] = {1, 1, 0, 0, 1, 1, 1, 1}, h[3] = {0.1, 0.1, 0.1};
    const int explicit_ok = (mi->methods & TSR_METHODS_EXPLICIT) != 0;
    assert_int_equal(explicit_ok, isfinite(tsr_model_dt_limit((tsr_model_id)m, p, h, 2)));
  }
  assert_int_equal(tsr_models[TSR_MODEL_POISSON].steady, 1);
  assert_int_equal(tsr_models[TSR_MODEL_POISSON].methods, TSR_METHODS_PINN);
  assert_int_equal(tsr_models[TSR_MODEL_BURGERS].methods, TSR_METHODS_PINN);
  assert_int_equal(tsr_models[TSR_MODEL_BURGERS].steady, 0);
  assert_true(fabs(tsr_models[TSR_MODEL_BURGERS].param[0].def - 0.01 / 3.14159265358979323846) < 1e-18);
  /* allen_cahn's reaction bound: 0.5 up to gamma = 1, 0.5 / gamma above */
  const double h[3] = {1.0, 1.0, 1.0};
  const double g1[2] = {0.01, 1.0}, g0[2] = {0.01, 0.25}, g4[2] = {0.01, 4.0};
  assert_true(tsr_model_dt_limit(TSR_MODEL_ALLEN_CAHN, g1, h, 2) == 0.5);
  assert_true(tsr_model_dt_limit(TSR_MODEL_ALLEN_CAHN, g0, h, 2) == 0.5);
  assert_true(tsr_model_dt_limit(TSR_MODEL_ALLEN_CAHN, g4, h, 2) == 0.125);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(jacobian_matches_differences),
      cmocka_unit_test(rhs_is_point_on_stencil),
      cmocka_unit_test(point_keeps_legacy_bits),
      cmocka_unit_test(table_methods),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
