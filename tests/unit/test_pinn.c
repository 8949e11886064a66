/* The PINN's loss on the host (solver/pinn/engine.h, kernels/pinn.h): for every PDE the method
 * takes (poisson 2D, heat 2D + t, burgers 1D + t, allen_cahn 1D + t periodic, advection-
 * diffusion 2D + t half periodic), with Dirichlet, Neumann and periodic terms, the parameter
 * gradient of the whole weighted loss against central differences in fp64 (relative error
 * <= 1e-6, norm-wise over every parameter), also on the first and last of 2 and 4 subdomains
 * with the interface term (the neighbours' values held fixed), and on 2 time slabs with the slab
 * term; Adam steps that lower the loss;
 * the random points' generator reproducible and uniform; and the batch's terms where the case
 * puts them. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "tests/support/pinn_cases.h"

/* Central differences with Richardson extrapolation: error O(h^4). */
static double fd(tsr_test_pinn *t, double *th, size_t i, double h, double *scratch) {
  double x = th[i], f[4];
  const double s[4] = {h, -h, 2 * h, -2 * h};
  for (int k = 0; k < 4; ++k) {
    th[i] = x + s[k];
    f[k] = tsr_test_pinn_loss(t, th, scratch);
  }
  th[i] = x;
  double d1 = (f[0] - f[1]) / (2 * h), d2 = (f[2] - f[3]) / (4 * h);
  return (4 * d1 - d2) / 3;
}

/* The gradient of t's whole loss against central differences; returns the norm-wise relative
 * error. */
static double grad_check(tsr_test_pinn *pt, const char *label) {
  tsr_test_pinn t = *pt;
  {
    double *g = malloc(t.np * sizeof *g), *s = malloc(t.np * sizeof *s);
    double *th = malloc(t.np * sizeof *th);
    memcpy(th, t.theta, t.np * sizeof *th);
    double L = tsr_test_pinn_loss(&t, th, g);
    assert_true(isfinite(L) && L > 0.0);
    double num = 0.0, den = 0.0, worst = 0.0;
    for (size_t i = 0; i < t.np; ++i) {
      double d = fd(&t, th, i, 1e-4, s);
      num += (d - g[i]) * (d - g[i]);
      den += g[i] * g[i];
      double r = fabs(d - g[i]) / (fabs(g[i]) + 1e-3 * sqrt(den / (double)(i + 1)));
      if (r > worst) worst = r;
    }
    double rel = sqrt(num / den);
    printf("%-20s %-12s %zu parameters, %d points, %d terms: loss %.4e, gradient vs central "
           "differences %.2e (norm-wise), %.2e (worst entry)\n",
           tsr_models[t.c->model].name, label, t.np, t.b.npts, t.b.nterm, L, rel, worst);
    free(g);
    free(s);
    free(th);
    return rel;
  }
}

static void gradients(void **state) {
  (void)state;
  for (int k = 0; k < TSR_TEST_PINN_NCASES; ++k) {
    tsr_test_pinn t;
    int rc = tsr_test_pinn_make(k, 0, 0, &t);
    if (rc) fprintf(stderr, "case %d: %s\n", k, tsr_err_message());
    assert_int_equal(rc, 0);
    assert_true(grad_check(&t, "whole") <= 1e-6);
    tsr_test_pinn_free(&t);
  }
}

/* Each case on the first and the last of 2 and 4 subdomains (RCB boxes, a periodic axis
 * shared across ranks included): the gradient of the loss with its interface term (value,
 * flux and residual continuity, weights 1.5, 0.7, 0.3) against central differences of the
 * whole loss, the neighbours' values held fixed (random), fp64, <= 1e-6. */
static void interface_gradients(void **state) {
  (void)state;
  for (int k = 0; k < TSR_TEST_PINN_NCASES; ++k)
    for (int nbox = 2; nbox <= 4; nbox += 2)
      for (int box = 0; box < nbox; box += nbox - 1) {
        tsr_test_pinn t;
        int rc = tsr_test_pinn_make_sub(k, 0, 0, nbox, box, &t);
        if (rc) fprintf(stderr, "case %d on %d boxes: %s\n", k, nbox, tsr_err_message());
        assert_int_equal(rc, 0);
        assert_true(t.b.if_count > 0);
        assert_int_equal(t.b.term[t.b.nterm - 1].kind, TSR_LOSS_INTERFACE);
        size_t n = (size_t)t.b.if_count * TSR_PINN_IFACE_NV * (size_t)t.c->ncomp;
        double *N = malloc(n * sizeof *N);
        for (size_t i = 0; i < n; ++i) N[i] = 2.0 * tsr_pinn_uniform(3, (uint64_t)k, 9, i) - 1.0;
        assert_int_equal(tsr_pinn_engine_set_neighbours(t.e, N), TSR_OK);
        char label[32];
        snprintf(label, sizeof label, "box %d of %d", box, nbox);
        assert_true(grad_check(&t, label) <= 1e-6);
        free(N);
        tsr_test_pinn_free(&t);
      }
}

/* Each time-dependent case on 2 time slabs (all at once), on the whole grid and on the last of
 * 2 boxes: slab 0 has the case's initial term and points on its later face (sent, no term of
 * its own), slab 1 the term `slab initial` (u against the earlier slab's value at t_1) and no
 * initial term; the gradient with the slab term (and the interface term in space) against
 * central differences, the neighbours' values held fixed (random), fp64, <= 1e-6. */
static void slab_gradients(void **state) {
  (void)state;
  for (int k = 0; k < TSR_TEST_PINN_NCASES; ++k)
    for (int nbox = 1; nbox <= 2; ++nbox)
      for (int slab = 0; slab < 2; ++slab) {
        if (strstr(tsr_test_pinn_cases[k], "model: poisson")) continue; /* steady: no slabs */
        tsr_test_pinn t;
        int rc = tsr_test_pinn_make_slab(k, 0, 0, nbox, nbox - 1, 2, slab, &t);
        if (rc) fprintf(stderr, "case %d on slab %d: %s\n", k, slab, tsr_err_message());
        assert_int_equal(rc, 0);
        int has_slab = 0, has_initial = 0;
        for (int j = 0; j < t.b.nterm; ++j) {
          has_slab |= t.b.term[j].kind == TSR_LOSS_SLAB;
          has_initial |= t.b.term[j].kind == TSR_LOSS_INITIAL;
        }
        assert_int_equal(has_slab, slab == 1);
        assert_int_equal(has_initial, slab == 0);
        int nc = 1;
        for (int a = 0; a < t.c->dim; ++a) nc *= tsr_box_len(&t.b.box, a);
        assert_int_equal(t.b.if_count - t.b.if_space, nc); /* one face's cells */
        assert_true(t.b.t0 == (slab ? 0.5 * t.c->time.end : 0.0));
        size_t n = (size_t)t.b.if_count * TSR_PINN_IFACE_NV * (size_t)t.c->ncomp;
        double *N = malloc(n * sizeof *N);
        for (size_t i = 0; i < n; ++i) N[i] = 2.0 * tsr_pinn_uniform(5, (uint64_t)k, 9, i) - 1.0;
        assert_int_equal(tsr_pinn_engine_set_neighbours(t.e, N), TSR_OK);
        char label[32];
        snprintf(label, sizeof label, "slab %d box %d/%d", slab, nbox - 1, nbox);
        assert_true(grad_check(&t, label) <= 1e-6);
        free(N);
        tsr_test_pinn_free(&t);
      }
}

/* A few Adam steps on each case lower the loss, and the history rows are the losses before
 * each step (the first one is the loss at the starting parameters). */
static void adam_lowers(void **state) {
  (void)state;
  for (int k = 0; k < TSR_TEST_PINN_NCASES; ++k) {
    for (int single = 0; single < 2; ++single) {
      tsr_test_pinn t;
      assert_int_equal(tsr_test_pinn_make(k, 0, single, &t), 0);
      double *g = malloc(t.np * sizeof *g);
      double L0 = tsr_test_pinn_loss(&t, t.theta, g);
      double hist[8 * TSR_PINN_MAX_TERMS], first = 0.0, last = 0.0;
      assert_int_equal(tsr_pinn_engine_run(t.e, 8, hist), TSR_OK);
      for (int j = 0; j < t.b.nterm; ++j) {
        first += hist[j];
        last += hist[7 * t.b.nterm + j];
      }
      assert_true(fabs(first - L0) <= 1e-12 * L0 || single);
      assert_true(last < first);
      free(g);
      tsr_test_pinn_free(&t);
    }
  }
}

static void generator(void **state) {
  (void)state;
  double a = tsr_pinn_uniform(5, 2, 3, 4), b = tsr_pinn_uniform(5, 2, 3, 4);
  assert_true(a == b);
  assert_true(tsr_pinn_uniform(5, 2, 3, 5) != a && tsr_pinn_uniform(6, 2, 3, 4) != a &&
              tsr_pinn_uniform(5, 3, 3, 4) != a && tsr_pinn_uniform(5, 2, 4, 4) != a);
  double s = 0.0, s2 = 0.0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    double u = tsr_pinn_uniform(1, 0, 0, (uint64_t)i);
    assert_true(u >= 0.0 && u < 1.0);
    s += u;
    s2 += u * u;
  }
  assert_true(fabs(s / n - 0.5) < 0.005);
  assert_true(fabs(s2 / n - s / n * (s / n) - 1.0 / 12.0) < 0.002);
}

/* The batch of the periodic Allen-Cahn case: pde, the x pair, initial; the pair's points on
 * the two faces at the same times; the initial points at t = 0 with u0 as target. */
static void batch_layout(void **state) {
  (void)state;
  tsr_test_pinn t;
  assert_int_equal(tsr_test_pinn_make(3, 0, 0, &t), 0);
  assert_int_equal(t.b.nterm, 3);
  assert_int_equal(t.b.term[1].kind, TSR_LOSS_PERIODIC);
  const tsr_loss_term *p = &t.b.term[1];
  for (int i = 0; i < p->count; ++i) {
    const double *a = t.b.X + 2 * (p->start + i), *b = t.b.X + 2 * (p->start + p->count + i);
    assert_true(a[0] == -1.0 && b[0] == 1.0 && a[1] == b[1] && a[1] >= 0.0 && a[1] <= 0.5);
  }
  const tsr_loss_term *q = &t.b.term[2];
  assert_int_equal(q->kind, TSR_LOSS_INITIAL);
  for (int i = 0; i < q->count; ++i) {
    const double *x = t.b.X + 2 * (q->start + i);
    assert_true(x[1] == 0.0);
    assert_true(fabs(t.b.T[q->start + i] - x[0] * x[0] * cos(3.141592653589793 * x[0])) < 1e-15);
  }
  tsr_test_pinn_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(gradients),
                                     cmocka_unit_test(interface_gradients),
                                     cmocka_unit_test(slab_gradients),
                                     cmocka_unit_test(adam_lowers),
                                     cmocka_unit_test(generator),
                                     cmocka_unit_test(batch_layout)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
