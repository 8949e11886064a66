/* Accuracy of the explicit solvers against exact and manufactured solutions: observed orders
 * of convergence in space and time, and conservation. Runs in-process on one rank. */
#include <math.h>
#include <mpi.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "io/case.h"
#include "solver/run.h"

/* Runs the case text (printf format) and returns the result; fails the test on any error. */
static tsr_run_result run_text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static tsr_run_result run_text(const char *fmt, ...) {
  char text[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  tsr_case *c = NULL;
  tsr_err err = tsr_case_load_string("accuracy.yaml", text, 0, NULL, &c);
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

static double order(double e_coarse, double e_fine, double ratio) {
  return log(e_coarse / e_fine) / log(ratio);
}

/* Three resolutions, observed orders printed, the finest pair asserted. */
static void check_orders(const char *what, const double e[3], double ratio, double min_order) {
  double p1 = order(e[0], e[1], ratio), p2 = order(e[1], e[2], ratio);
  printf("%-44s errors %.3e %.3e %.3e  observed orders %.3f %.3f (need >= %.2f)\n", what, e[0],
         e[1], e[2], p1, p2, min_order);
  assert_true(p2 >= min_order);
  assert_true(p1 >= min_order - 0.2);
}

static void heat_second_order_in_space(void **state) {
  (void)state;
  double e[3];
  int n[3] = {16, 32, 64};
  for (int i = 0; i < 3; ++i) {
    tsr_run_result r = run_text(
        "model: heat\ngrid: {cells: [%d, %d]}\nparams: {kappa: 1}\n"
        "initial: {u: \"sin(pi*x)*sin(pi*y)\"}\n"
        "boundary: {default: {type: dirichlet, value: 0}}\n"
        "time: {scheme: rk4, dt: auto, cfl: 0.5, end: 0.05}\n"
        "exact: {u: \"exp(-2*pi*pi*kappa*t)*sin(pi*x)*sin(pi*y)\"}\n",
        n[i], n[i]);
    e[i] = r.err_l2[0];
  }
  check_orders("heat 2D, space (Dirichlet), L2", e, 2.0, 1.9);
}

/* Time error alone: compare with the exact solution of the semi-discrete system, whose decay
 * rate for one Fourier mode on a periodic grid of N cells is kappa 4 sin^2(pi/N) N^2. The grid
 * is small so that even the fastest mode (rate 4 kappa N^2, fed by round-off) stays inside
 * every scheme's stability region at the largest dt. */
static void time_order(int scheme_order, const char *scheme, double min_order) {
  double e[3];
  int steps[3] = {8, 16, 32};
  for (int i = 0; i < 3; ++i) {
    tsr_run_result r = run_text(
        "model: heat\ngrid: {cells: [8, 1], periodic: [true, true]}\n"
        "params: {kappa: 0.05, N: 8}\n"
        "initial: {u: \"sin(2*pi*x)\"}\n"
        "time: {scheme: %s, dt: %.17g, steps: %d}\n"
        "exact: {u: \"exp(-kappa*4*pow(sin(pi/N), 2)*N*N*t)*sin(2*pi*x)\"}\n",
        scheme, 1.0 / steps[i], steps[i]);
    e[i] = r.err_l2[0];
  }
  char what[64];
  snprintf(what, sizeof what, "heat, time, %s (order %d), L2", scheme, scheme_order);
  check_orders(what, e, 2.0, min_order);
}

static void rk4_fourth_order_in_time(void **state) { time_order(4, "rk4", 3.9); }
static void ssp_rk3_third_order_in_time(void **state) { time_order(3, "ssp_rk3", 2.9); }
static void ssp_rk2_second_order_in_time(void **state) { time_order(2, "ssp_rk2", 1.9); }
static void euler_first_order_in_time(void **state) { time_order(1, "euler", 0.9); }

static void heat3d_manufactured(void **state) {
  double e[3];
  int n[3] = {8, 16, 32};
  for (int i = 0; i < 3; ++i) {
    tsr_run_result r = run_text(
        "model: heat\ngrid: {cells: [%d, %d, %d]}\nparams: {kappa: 0.5}\n"
        "initial: {u: \"sin(pi*x)*sin(pi*y)*sin(pi*z)\"}\n"
        "source: {u: \"(3*pi*pi*kappa - 1)*exp(-t)*sin(pi*x)*sin(pi*y)*sin(pi*z)\"}\n"
        "boundary: {default: {type: dirichlet, value: 0}}\n"
        "time: {scheme: ssp_rk3, dt: auto, cfl: 0.5, end: 0.1}\n"
        "exact: {u: \"exp(-t)*sin(pi*x)*sin(pi*y)*sin(pi*z)\"}\n",
        n[i], n[i], n[i]);
    e[i] = r.err_l2[0];
  }
  check_orders("heat 3D, manufactured source, L2", e, 2.0, 1.9);
}

static void neumann_conserves_heat(void **state) {
  tsr_run_result r0 = run_text(
      "model: heat\ngrid: {cells: [24, 20]}\n"
      "initial: {u: \"exp(-20*(pow(x - 0.3, 2) + pow(y - 0.6, 2)))\"}\n"
      "boundary: {default: {type: neumann, value: 0}}\n"
      "time: {scheme: euler, dt: auto, steps: 1}\n");
  tsr_run_result r1 = run_text(
      "model: heat\ngrid: {cells: [24, 20]}\n"
      "initial: {u: \"exp(-20*(pow(x - 0.3, 2) + pow(y - 0.6, 2)))\"}\n"
      "boundary: {default: {type: neumann, value: 0}}\n"
      "time: {scheme: ssp_rk3, dt: auto, steps: 400}\n");
  double rel = fabs(r1.sum[0] - r0.sum[0]) / fabs(r0.sum[0]);
  printf("heat with zero-flux walls: integral %.15e -> %.15e, relative change %.2e\n", r0.sum[0],
         r1.sum[0], rel);
  assert_true(rel < 1e-12);
  assert_true(r1.max[0] < r0.max[0]); /* it did diffuse */
}

static void advection_diffusion_second_order(void **state) {
  double e[3];
  int n[3] = {16, 32, 64};
  for (int i = 0; i < 3; ++i) {
    tsr_run_result r = run_text(
        "model: advection_diffusion\ngrid: {cells: [%d, %d], periodic: [true, true]}\n"
        "params: {kappa: 0.01, vx: 1.0, vy: 0.5}\n"
        "initial: {u: \"sin(2*pi*x)*sin(2*pi*y)\"}\n"
        "time: {scheme: rk4, dt: auto, cfl: 0.5, end: 0.25}\n"
        "exact: {u: \"exp(-8*pi*pi*kappa*t)*sin(2*pi*(x - vx*t))*sin(2*pi*(y - vy*t))\"}\n",
        n[i], n[i]);
    e[i] = r.err_l2[0];
    if (i == 2) {
      /* periodic advection-diffusion conserves the integral (here 0) */
      printf("advection-diffusion integral after the run: %.3e\n", r.sum[0]);
      assert_true(fabs(r.sum[0]) < 1e-13);
    }
  }
  check_orders("advection-diffusion 2D periodic, L2", e, 2.0, 1.9);
}

static void wave_standing_second_order(void **state) {
  double e[3], ev[3];
  int n[3] = {16, 32, 64};
  for (int i = 0; i < 3; ++i) {
    tsr_run_result r = run_text(
        "model: wave\ngrid: {cells: [%d, %d]}\nparams: {c: 1}\n"
        "initial: {u: \"sin(pi*x)*sin(pi*y)\", v: \"0\"}\n"
        "boundary: {default: {type: dirichlet, value: 0}}\n"
        "time: {scheme: rk4, dt: auto, cfl: 0.5, end: 0.5}\n"
        "exact: {u: \"sin(pi*x)*sin(pi*y)*cos(sqrt(2)*pi*c*t)\",\n"
        "        v: \"-sqrt(2)*pi*c*sin(pi*x)*sin(pi*y)*sin(sqrt(2)*pi*c*t)\"}\n",
        n[i], n[i]);
    e[i] = r.err_l2[0];
    ev[i] = r.err_l2[1];
  }
  check_orders("wave 2D standing wave, u, L2", e, 2.0, 1.9);
  check_orders("wave 2D standing wave, v, L2", ev, 2.0, 1.9);
}

static void gray_scott_manufactured(void **state) {
  /* u = 1 - a S e^-t, v = b C e^-t with S = sin sin, C = cos cos; sources make them exact */
  const char *U = "(1 - a*sin(pi*x)*sin(pi*y)*exp(-t))";
  const char *V = "(b*cos(pi*x)*cos(pi*y)*exp(-t))";
  double e[3], ev[3];
  int n[3] = {16, 32, 64};
  for (int i = 0; i < 3; ++i) {
    tsr_run_result r = run_text(
        "model: gray_scott\ngrid: {cells: [%d, %d]}\n"
        "params: {Du: 0.05, Dv: 0.02, F: 0.04, k: 0.06, a: 0.2, b: 0.3}\n"
        "initial: {u: \"%s\", v: \"%s\"}\n"
        "source:\n"
        "  u: \"a*sin(pi*x)*sin(pi*y)*exp(-t)*(1 - 2*pi*pi*Du) + %s*%s*%s - F*(1 - %s)\"\n"
        "  v: \"b*cos(pi*x)*cos(pi*y)*exp(-t)*(2*pi*pi*Dv - 1) - %s*%s*%s + (F + k)*%s\"\n"
        "boundary: {default: {type: dirichlet, value: {u: \"%s\", v: \"%s\"}}}\n"
        "time: {scheme: ssp_rk3, dt: auto, cfl: 0.5, end: 0.5}\n"
        "exact: {u: \"%s\", v: \"%s\"}\n",
        n[i], n[i], U, V, U, V, V, U, U, V, V, V, U, V, U, V);
    e[i] = r.err_l2[0];
    ev[i] = r.err_l2[1];
  }
  check_orders("Gray-Scott 2D manufactured, u, L2", e, 2.0, 1.8);
  check_orders("Gray-Scott 2D manufactured, v, L2", ev, 2.0, 1.8);
  assert_true(e[2] < 1e-4 && ev[2] < 1e-4);
}

static void allen_cahn_steady_kink(void **state) {
  double e[3];
  int n[3] = {32, 64, 128};
  for (int i = 0; i < 3; ++i) {
    tsr_run_result r = run_text(
        "model: allen_cahn\ngrid: {cells: [%d, 4], lo: [-1, 0], hi: [1, 1], periodic: [false, true]}\n"
        "params: {eps: 0.1}\n"
        "initial: {u: \"tanh(x / (sqrt(2)*eps))\"}\n"
        "boundary: {xlo: {type: dirichlet, value: \"tanh(-1 / (sqrt(2)*eps))\"},\n"
        "           xhi: {type: dirichlet, value: \"tanh(1 / (sqrt(2)*eps))\"}}\n"
        "time: {scheme: ssp_rk3, dt: auto, end: 2}\n"
        "exact: {u: \"tanh(x / (sqrt(2)*eps))\"}\n",
        n[i]);
    e[i] = r.err_l2[0];
  }
  check_orders("Allen-Cahn steady kink, L2", e, 2.0, 1.8);
  assert_true(e[2] < 1e-3);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(heat_second_order_in_space),
      cmocka_unit_test(rk4_fourth_order_in_time),
      cmocka_unit_test(ssp_rk3_third_order_in_time),
      cmocka_unit_test(ssp_rk2_second_order_in_time),
      cmocka_unit_test(euler_first_order_in_time),
      cmocka_unit_test(heat3d_manufactured),
      cmocka_unit_test(neumann_conserves_heat),
      cmocka_unit_test(advection_diffusion_second_order),
      cmocka_unit_test(wave_standing_second_order),
      cmocka_unit_test(gray_scott_manufactured),
      cmocka_unit_test(allen_cahn_steady_kink),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  MPI_Finalize();
  return rc;
}
