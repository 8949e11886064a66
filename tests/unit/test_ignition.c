/* The ignition model (kernels/models/ignition.h): its sub-stepped reaction against a
 * tight-tolerance reference, the work count (bounded, deterministic, 1 away from the front),
 * the work of a moving front through tsr_work_host, time convergence of whole runs, and its
 * params' ranges. One rank, in-process. */
#include <math.h>
#include <mpi.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "io/case.h"
#include "kernels/work.h"
#include "solver/run.h"

/* kappa, A, theta, delta, nmax */
static tsr_cell_coef coef(double A, double delta, double nmax, double dt) {
  const double p[5] = {1e-3, A, 0.1, delta, nmax}, h[3] = {0.01, 0.01, 0.01};
  tsr_field *f = NULL;
  tsr_box b = {{0, 0, 0}, {4, 4, 1}};
  assert_int_equal(tsr_field_create(2, &b, 1, 1, &f), TSR_OK);
  tsr_cell_coef k;
  tsr_stage_coef_init(&k, TSR_MODEL_IGNITION, p, h, f);
  tsr_field_destroy(&f);
  k.dt = dt;
  return k;
}

/* du/dt = d + (1 - u) g(u) by classic RK4 in n equal steps: the reference. The rate is the
 * model's pointwise F at a flat point (no diffusion) plus d. */
static double rate(double v, double d, const tsr_cell_coef *k) {
  tsr_point pt = {.u = {v}, .lap = {0.0}};
  double r;
  tsr_ignition_point(&pt, k, &r, NULL);
  return d + r;
}
static double reference(double u, double d, const tsr_cell_coef *k, int n) {
  const double h = k->dt / n;
#define F(v) rate((v), d, k)
  for (int i = 0; i < n; ++i) {
    double k1 = F(u), k2 = F(u + 0.5 * h * k1), k3 = F(u + 0.5 * h * k2), k4 = F(u + h * k3);
    u += h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
  }
#undef F
  return u;
}

/* 0-D: the sub-stepped reaction converges to the reference as delta shrinks (first order:
 * the linearly implicit sub-step), from cells below, at and past the ignition threshold. */
static void react_matches_reference(void **state) {
  (void)state;
  const double u0[] = {0.05, 0.12, 0.3, 0.6, 0.9}, dd[] = {0.0, 2.0};
  for (int a = 0; a < 5; ++a)
    for (int b = 0; b < 2; ++b) {
      double e[3];
      int cnt[3];
      for (int l = 0; l < 3; ++l) {
        tsr_cell_coef k = coef(100.0, 0.02 / (1 << (2 * l)), 1e5, 0.05);
        double ref = reference(u0[a], dd[b], &k, 200000);
        e[l] = fabs(tsr_ignition_react(u0[a], dd[b], &k, &cnt[l]) - ref);
      }
      printf("u0 %.2f d %.1f: sub-steps %4d %4d %4d  errors %.2e %.2e %.2e\n", u0[a], dd[b],
             cnt[0], cnt[1], cnt[2], e[0], e[1], e[2]);
      assert_true(e[0] < 0.1);
      assert_true(e[2] < 5e-3);
      /* a quarter of delta: about a quarter of the error where the sub-steps resolve the
       * step (a cell barely past theta takes one sub-step at every delta here) */
      if (cnt[1] >= 4) assert_true(e[2] < 0.4 * e[1]);
    }
}

/* The count: within [1, nmax], 1 for cold and burnt cells, many in the front, the same for the
 * same input (bits of u too), non-increasing in delta, non-decreasing in dt. */
static void work_bounded_deterministic(void **state) {
  (void)state;
  for (int nmax = 1; nmax <= 1000; nmax *= 10) {
    tsr_cell_coef k = coef(1e4, 0.01, nmax, 0.01);
    for (int i = -20; i <= 140; ++i) {
      double u = i / 100.0;
      int n1, n2;
      double a = tsr_ignition_react(u, 0.0, &k, &n1), b = tsr_ignition_react(u, 0.0, &k, &n2);
      assert_int_equal(n1, n2);
      assert_memory_equal(&a, &b, sizeof a);
      assert_true(n1 >= 1 && n1 <= nmax);
      if (u <= 0.1 || u == 1.0) assert_int_equal(n1, 1);
      if (u > 0.1 && u < 1.0) assert_true(a >= u && a <= 1.0); /* no overshoot past burnt */
    }
    int n;
    tsr_ignition_react(0.5, 0.0, &k, &n);
    assert_int_equal(n, nmax < 100 ? nmax : n);
    assert_true(nmax < 100 || n >= 50);
  }
  for (int i = 11; i < 100; ++i) {
    int prev_d = 1 << 30, prev_t = 0;
    for (int l = 0; l < 6; ++l) {
      tsr_cell_coef kd = coef(1e3, 0.001 * (1 << l), 1e5, 0.01);
      tsr_cell_coef kt = coef(1e3, 0.01, 1e5, 0.001 * (1 << l));
      int nd, nt;
      tsr_ignition_react(i / 100.0, 0.0, &kd, &nd);
      tsr_ignition_react(i / 100.0, 0.0, &kt, &nt);
      assert_true(nd <= prev_d);
      assert_true(nt >= prev_t);
      prev_d = nd;
      prev_t = nt;
    }
  }
  /* the NaN of a blown-up run ends the loop too */
  tsr_cell_coef k = coef(1e4, 0.01, 1000, 0.01);
  int n;
  tsr_ignition_react(NAN, 0.0, &k, &n);
  assert_int_equal(n, 1);
  tsr_ignition_react(INFINITY, 0.0, &k, &n);
  assert_true(n >= 1 && n <= 1000);
}

/* Neumann walls in x (mirror), periodic in y, on a field of one ghost layer. */
static void ghosts(tsr_field *f, int nx, int ny) {
  double *u = f->data;
  for (int j = 0; j < ny; ++j) {
    u[tsr_field_at(f, 0, -1, j, 0)] = u[tsr_field_at(f, 0, 0, j, 0)];
    u[tsr_field_at(f, 0, nx, j, 0)] = u[tsr_field_at(f, 0, nx - 1, j, 0)];
  }
  for (int i = -1; i <= nx; ++i) {
    u[tsr_field_at(f, 0, i, -1, 0)] = u[tsr_field_at(f, 0, i, ny - 1, 0)];
    u[tsr_field_at(f, 0, i, ny, 0)] = u[tsr_field_at(f, 0, i, 0, 0)];
  }
}

/* The example cases/ignition2d.yaml's parameters, spacing and dt on a strip across its grid
 * (the front as a line): the front moves, and the work is 1 away from it and at least 10 in
 * it, every step; tsr_work_host counts a single field as it counts a double one holding the
 * same values. Prints the work's min / max / mean as the front goes. */
static void front_moves_work_varies(void **state) {
  (void)state;
  const char *src = getenv("TESSERA_SOURCE");
  char path[4096];
  snprintf(path, sizeof path, "%s/cases/ignition2d.yaml", src ? src : "..");
  tsr_case *c = NULL;
  if (tsr_case_load(path, 0, NULL, &c)) fail_msg("%s", tsr_err_message());
  const int nx = c->cells[0], ny = 4;
  const double hx = (c->hi[0] - c->lo[0]) / nx, h[3] = {hx, hx, 1.0};
  const double *p = c->param_value;
  tsr_box box = {{0, 0, 0}, {nx, ny, 1}};
  tsr_field *u, *v, *us, *ud;
  assert_int_equal(tsr_field_create(2, &box, 1, 1, &u), TSR_OK);
  assert_int_equal(tsr_field_create(2, &box, 1, 1, &v), TSR_OK);
  assert_int_equal(tsr_field_create(2, &box, 1, 1, &ud), TSR_OK);
  assert_int_equal(tsr_field_create_as(2, &box, 1, 1, TSR_MEM_HOST, TSR_PREC_SINGLE, &us),
                   TSR_OK);
  for (int j = 0; j < ny; ++j)
    for (int i = 0; i < nx; ++i)
      tsr_field_set(u, tsr_field_at(u, 0, i, j, 0), i < nx / 10 ? 1.0 : 0.0);
  tsr_stage_desc s = {TSR_MODEL_IGNITION, 1, TSR_STAGE_EULER, 0.0, {0}};
  tsr_stage_coef_init(&s.coef, TSR_MODEL_IGNITION, p, h, u);
  s.dt = c->time.cfl * tsr_model_dt_limit(TSR_MODEL_IGNITION, p, h, 2);
  int32_t *w = malloc(sizeof(int32_t) * nx * ny), *ws = malloc(sizeof(int32_t) * nx * ny);
  double first = -1.0, last = -1.0;
  const int steps = 300;
  for (int step = 0; step <= steps; ++step) {
    ghosts(u, nx, ny);
    int64_t total;
    assert_int_equal(tsr_work_host(&s, &box, u, w, &total), TSR_OK);
    int lo = 1 << 30, hi = 0, front = 0;
    for (int i = 0; i < nx * ny; ++i) {
      lo = w[i] < lo ? w[i] : lo;
      hi = w[i] > hi ? w[i] : hi;
    }
    for (int i = 0; i < nx; ++i) front += tsr_field_get(u, tsr_field_at(u, 0, i, 0, 0)) > 0.5;
    if (first < 0) first = front;
    last = front;
    if (step % 25 == 0) {
      printf("step %3d front at cell %3d  work min %d max %d mean %.2f\n", step, front, lo, hi,
             (double)total / (nx * ny));
      /* single precision reads the stencil through the gathered window: on the same
       * (float) values it must count what the double path counts */
      size_t ng = (size_t)(nx + 2) * (ny + 2);
      for (size_t o = 0; o < ng; ++o) {
        tsr_field_set(us, (ptrdiff_t)o, tsr_field_get(u, (ptrdiff_t)o));
        tsr_field_set(ud, (ptrdiff_t)o, tsr_field_get(us, (ptrdiff_t)o));
      }
      int64_t ts, td;
      assert_int_equal(tsr_work_host(&s, &box, us, ws, &ts), TSR_OK);
      assert_int_equal(tsr_work_host(&s, &box, ud, w, &td), TSR_OK);
      assert_memory_equal(w, ws, sizeof(int32_t) * nx * ny);
      assert_true(ts == td);
    }
    assert_int_equal(lo, 1);
    assert_true(hi >= 10);
    tsr_stage_host(&s, &box, u, NULL, NULL, NULL, v);
    tsr_field *t = u;
    u = v;
    v = t;
  }
  printf("front moved from cell %.0f to %.0f in %d steps\n", first, last, steps);
  assert_true(last - first >= nx / 4);
  tsr_box outside = {{0, 0, 0}, {nx + 1, ny, 1}};
  assert_int_equal(tsr_work_host(&s, &outside, u, w, NULL), TSR_ERR_STATE);
  free(w);
  free(ws);
  tsr_field_destroy(&u);
  tsr_field_destroy(&v);
  tsr_field_destroy(&us);
  tsr_field_destroy(&ud);
  tsr_case_destroy(&c);
}

static tsr_run_result run_text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static tsr_run_result run_text(const char *fmt, ...) {
  char text[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  tsr_case *c = NULL;
  tsr_err err = tsr_case_load_string("ignition.yaml", text, 0, NULL, &c);
  if (!err) err = tsr_case_check_expressions(c);
  if (err) fail_msg("case: %s\n%s", tsr_err_message(), text);
  tsr_run_opts o = tsr_run_opts_default();
  o.quiet = 1;
  o.write_output = 0;
  tsr_run_result r;
  err = tsr_run(c, MPI_COMM_WORLD, &o, &r);
  if (err) fail_msg("run: %s", tsr_err_message());
  tsr_case_destroy(&c);
  return r;
}

/* Whole runs converge in time: the burnt amount (sum of u) at t = 0.4 with dt and delta halved
 * three times; the reaction's coupling and sub-steps are first order, so its changes should
 * halve (ratios >= 1.6). */
static void runs_converge_in_time(void **state) {
  (void)state;
  double s[4];
  for (int l = 0; l < 4; ++l) {
    tsr_run_result r = run_text(
        "model: ignition\ngrid: {cells: [400, 4], periodic: [false, true]}\n"
        "params: {kappa: 1e-3, A: 20, delta: %g}\n"
        "initial: {u: \"1/(1 + exp((x - 0.1)/0.01))\"}\n"
        "boundary: {default: {type: neumann, value: 0}}\n"
        "time: {scheme: ssp_rk2, dt: %g, end: 0.4}\n", 0.004 / (1 << l), 0.003 / (1 << l));
    s[l] = r.sum[0];
  }
  double r1 = (s[0] - s[1]) / (s[1] - s[2]), r2 = (s[1] - s[2]) / (s[2] - s[3]);
  printf("burnt amount %.9f %.9f %.9f %.9f: differences shrink by %.2f, %.2f\n", s[0], s[1],
         s[2], s[3], r1, r2);
  assert_true(r1 >= 1.6 && r2 >= 1.6);
  assert_true(s[2] > 0.1 * 0.5 * 1.1); /* it burnt beyond the initial tenth */
}

/* The params' ranges: each bad value refused with file:line and the key. */
static void params_validated(void **state) {
  (void)state;
  const char *bad[][2] = {{"theta: 1", "params.theta: must be < 1"},
                          {"theta: -0.1", "params.theta: must be >= 0"},
                          {"delta: 0", "params.delta: must be > 0"},
                          {"delta: 1.5", "params.delta: must be <= 1"},
                          {"nmax: 2.5", "params.nmax: must be a whole number"},
                          {"nmax: 0", "params.nmax: must be >= 1"},
                          {"nmax: 1e6", "params.nmax: must be <= 100000"},
                          {"A: -1", "params.A: must be >= 0"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    char text[512];
    snprintf(text, sizeof text,
             "model: ignition\ngrid: {cells: [8, 8]}\nparams: {%s}\ninitial: {u: 0}\n"
             "time: {end: 1}\n", bad[i][0]);
    tsr_case *c = NULL;
    assert_int_equal(tsr_case_load_string("bad.yaml", text, 0, NULL, &c), TSR_ERR_INPUT);
    const char *m = tsr_err_message();
    if (!strstr(m, bad[i][1]) || !strstr(m, "bad.yaml:3:")) fail_msg("%s: got %s", bad[i][0], m);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(react_matches_reference),
      cmocka_unit_test(work_bounded_deterministic),
      cmocka_unit_test(front_moves_work_varies),
      cmocka_unit_test(runs_converge_in_time),
      cmocka_unit_test(params_validated),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  MPI_Finalize();
  return rc;
}
