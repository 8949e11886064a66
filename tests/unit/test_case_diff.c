/* io/case_diff: two cases compared key by key on their resolved values (defaults and
 * overrides applied), fatal keys marked, layout and output keys ignored; the case record a
 * checkpoint keeps reads back as the same case. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "io/case.h"

static const char base[] =
    "model: heat\n"
    "grid: {cells: [40, 34], lo: [0, -1], hi: [2, 1], periodic: [true, false]}\n"
    "params: {kappa: 0.7, a: 0.3}\n"
    "initial: {u: \"sin(pi*x) + a*y\"}\n"
    "boundary: {ylo: {type: dirichlet, value: \"a*x\"}, yhi: {type: neumann}}\n"
    "time: {scheme: rk4, dt: auto, steps: 12}\n"
    "output: {checkpoint_every: 3}\n";

static tsr_case *load(const char *text, int n, char **set) {
  tsr_case *c = NULL;
  tsr_err err = tsr_case_load_string("t.yaml", text, n, set, &c);
  if (err) fprintf(stderr, "unexpected: %s\n", tsr_err_message());
  assert_int_equal(err, TSR_OK);
  return c;
}

/* The changes between base and base with the overrides set. */
static tsr_case_changes diff_sets(int n, char **set) {
  tsr_case *a = load(base, 0, NULL), *b = load(base, n, set);
  tsr_case_changes d;
  assert_int_equal(tsr_case_diff(a, b, &d), TSR_OK);
  tsr_case_destroy(&a);
  tsr_case_destroy(&b);
  return d;
}

static void expect(const tsr_case_changes *d, int i, const char *key, const char *a,
                   const char *b, int fatal) {
  assert_true(i < d->n);
  assert_string_equal(d->item[i].key, key);
  assert_string_equal(d->item[i].a, a);
  assert_string_equal(d->item[i].b, b);
  assert_int_equal(d->item[i].fatal, fatal);
}

static void test_same(void **state) {
  (void)state;
  /* layout and output keys, and values equal once resolved, are no difference */
  char *set[] = {"decomposition.partition=slabs", "output.keep=1", "backend=host", "name=other",
                 "params.kappa=7e-1", "time.cfl=0.9", "output.snapshot_every={time: 1}"};
  tsr_case_changes d = diff_sets(7, set);
  assert_int_equal(d.n, 0);
  assert_int_equal(d.nfatal, 0);
  tsr_case_changes_free(&d);
  tsr_case_changes_free(&d); /* zeroed: freeing again is harmless */
  tsr_case_changes_free(NULL);
}

static void test_params_and_exprs(void **state) {
  (void)state;
  char *set[] = {"params.kappa=0.8", "params.b=2", "initial.u=cos(pi*x)", "source.u=1",
                 "boundary.ylo.value=b*x", "boundary.yhi.type=dirichlet", "time.scheme=ssp_rk3",
                 "time.dt=1e-4", "grid.lo=[0, -1.5]"};
  tsr_case_changes d = diff_sets(9, set);
  int i = 0;
  expect(&d, i++, "grid.lo", "[0, -1]", "[0, -1.5]", 0);
  expect(&d, i++, "params.kappa", "0.7", "0.8", 0);
  expect(&d, i++, "params.b", "(none)", "2", 0);
  expect(&d, i++, "initial.u", "\"sin(pi*x) + a*y\"", "\"cos(pi*x)\"", 0);
  expect(&d, i++, "source.u", "(none)", "\"1\"", 0);
  expect(&d, i++, "boundary.ylo.value.u", "\"a*x\"", "\"b*x\"", 0);
  expect(&d, i++, "boundary.yhi.type", "neumann", "dirichlet", 0);
  expect(&d, i++, "time.scheme", "rk4", "ssp_rk3", 0);
  expect(&d, i++, "time.dt", "auto", "0.0001", 0);
  assert_int_equal(d.n, i);
  assert_int_equal(d.nfatal, 0);
  tsr_case_changes_free(&d);
}

static void test_time_end_and_steps(void **state) {
  (void)state;
  tsr_case *a = load(base, 0, NULL);
  char text[1024];
  snprintf(text, sizeof text, "%s", base);
  char *at = strstr(text, "steps: 12");
  memcpy(at, "end: 0.25", 9);
  tsr_case *b = load(text, 0, NULL);
  tsr_case_changes d;
  assert_int_equal(tsr_case_diff(a, b, &d), TSR_OK);
  expect(&d, 0, "time.end", "(none)", "0.25", 0);
  expect(&d, 1, "time.steps", "12", "(none)", 0);
  assert_int_equal(d.n, 2);
  tsr_case_changes_free(&d);
  tsr_case_destroy(&a);
  tsr_case_destroy(&b);
}

static void test_fatal(void **state) {
  (void)state;
  char *grid[] = {"grid.cells=[80, 68]"};
  tsr_case_changes d = diff_sets(1, grid);
  expect(&d, 0, "grid.cells", "[40, 34]", "[80, 68]", 1);
  assert_int_equal(d.n, 1);
  assert_int_equal(d.nfatal, 1);
  tsr_case_changes_free(&d);
  char *dim[] = {"grid.cells=[40, 34, 4]", "grid.lo=[0, -1, 0]", "grid.hi=[2, 1, 1]",
                 "grid.periodic=[true, false, false]"};
  d = diff_sets(4, dim);
  expect(&d, 0, "grid.cells", "[40, 34]", "[40, 34, 4]", 1);
  expect(&d, 1, "grid.lo", "[0, -1]", "[0, -1, 0]", 0);
  assert_int_equal(d.nfatal, 1);
  /* the z faces exist on one side only */
  int zlo = 0;
  for (int i = 0; i < d.n; ++i)
    if (!strcmp(d.item[i].key, "boundary.zlo.type"))
      zlo = !strcmp(d.item[i].a, "(none)") && !strcmp(d.item[i].b, "dirichlet");
  assert_true(zlo);
  tsr_case_changes_free(&d);
  /* another model: fatal, and its components' expressions show on one side only */
  tsr_case *a = load(base, 0, NULL);
  static const char wave_text[] =
      "model: wave\n"
      "grid: {cells: [40, 34], lo: [0, -1], hi: [2, 1], periodic: [true, false]}\n"
      "params: {a: 0.3}\n"
      "initial: {u: \"sin(pi*x) + a*y\", v: 0}\n"
      "boundary: {ylo: {type: dirichlet, value: \"a*x\"}, yhi: {type: neumann}}\n"
      "time: {scheme: rk4, dt: auto, steps: 12}\n";
  tsr_case *b = load(wave_text, 0, NULL);
  assert_int_equal(tsr_case_diff(a, b, &d), TSR_OK);
  expect(&d, 0, "model", "heat", "wave", 1);
  assert_int_equal(d.nfatal, 1);
  int v = 0, kappa = 0;
  for (int i = 0; i < d.n; ++i) {
    if (!strcmp(d.item[i].key, "initial.v")) v = !strcmp(d.item[i].a, "(none)");
    if (!strcmp(d.item[i].key, "params.kappa")) kappa = !strcmp(d.item[i].b, "(none)");
  }
  assert_true(v && kappa);
  tsr_case_changes_free(&d);
  tsr_case_destroy(&a);
  tsr_case_destroy(&b);
}

static void test_message(void **state) {
  (void)state;
  char *set[] = {"params.kappa=0.8", "params.a=0.4", "time.dt=0.001"};
  tsr_case_changes d = diff_sets(3, set);
  tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "head");
  tsr_case_changes_append(&d, "checkpoint", "this case", 2);
  assert_string_equal(tsr_err_message(),
                      "head\n"
                      "  params.kappa: checkpoint 0.7, this case 0.8\n"
                      "  params.a: checkpoint 0.3, this case 0.4\n"
                      "  ... and 1 more");
  tsr_case_changes_free(&d);
}

static void test_record(void **state) {
  (void)state;
  char *set[] = {"params.kappa=0.9", "output.keep=2", "initial.u=x*y"};
  tsr_case *a = load(base, 3, set);
  char *rec = tsr_case_record(a);
  assert_non_null(rec);
  assert_non_null(strstr(rec, "\n# --set params.kappa=0.9\n# --set output.keep=2\n"
                              "# --set initial.u=x*y\n"));
  assert_int_equal(strncmp(rec, base, strlen(base)), 0);
  tsr_case *b = NULL;
  assert_int_equal(tsr_case_load_record("ckpt.h5", rec, &b), TSR_OK);
  assert_int_equal(b->noverride, 3);
  assert_string_equal(b->overrides[0], "params.kappa=0.9");
  assert_string_equal(b->overrides[2], "initial.u=x*y");
  assert_true(tsr_case_param(b, "kappa") == 0.9);
  assert_int_equal(b->output.keep, 2);
  tsr_case_changes d;
  assert_int_equal(tsr_case_diff(a, b, &d), TSR_OK);
  assert_int_equal(d.n, 0);
  free(rec);
  tsr_case_destroy(&b);
  /* a text without a final newline, and one without overrides */
  tsr_case *c = load("model: heat\ngrid: {cells: [4, 4]}\ninitial: {u: 0}\ntime: {steps: 1}", 1,
                     set);
  rec = tsr_case_record(c);
  assert_non_null(strstr(rec, "{steps: 1}\n# --set params.kappa=0.9\n"));
  assert_int_equal(tsr_case_load_record("r", rec, &b), TSR_OK);
  assert_int_equal(b->noverride, 1);
  assert_true(tsr_case_param(b, "kappa") == 0.9);
  free(rec);
  tsr_case_destroy(&b);
  tsr_case_destroy(&c);
  tsr_case_destroy(&a);
  a = load(base, 0, NULL);
  rec = tsr_case_record(a);
  assert_string_equal(rec, base);
  assert_int_equal(tsr_case_load_record("r", rec, &b), TSR_OK);
  assert_int_equal(b->noverride, 0);
  free(rec);
  tsr_case_destroy(&a);
  tsr_case_destroy(&b);
  /* a record that does not read is an input error naming it */
  assert_int_equal(tsr_case_load_record("ckpt.h5", "model: hat\n# --set time.end=1\n", &b),
                   TSR_ERR_INPUT);
  assert_non_null(strstr(tsr_err_message(), "ckpt.h5:1:8: model: unknown"));
  assert_null(b);
}

/* pinn: keys count between two PINN cases (a PINN checkpoint's refusal lists them), except
 * where training stops and how often it logs; in an explicit case they are unused */
static void test_pinn_keys(void **state) {
  (void)state;
  static const char pinn[] = "model: heat\nmethod: pinn\ngrid: {cells: [8, 8]}\n"
                             "initial: {u: \"sin(pi*x)\"}\ntime: {end: 0.1}\n"
                             "boundary: {default: {type: dirichlet, value: 0}}\n"
                             "pinn: {network: {width: 8, depth: 2}}\n";
  char *set[] = {"pinn.adam.lr=0.5", "pinn.network.activation=sin", "pinn.slabs=causal",
                 "pinn.adam.iterations=7", "pinn.log_every=3", "decomposition.time_slices=2"};
  tsr_case *a = load(pinn, 0, NULL), *b = load(pinn, 6, set);
  tsr_case_changes d;
  assert_int_equal(tsr_case_diff(a, b, &d), TSR_OK);
  assert_int_equal(d.n, 3);
  expect(&d, 0, "pinn.network.activation", "tanh", "sin", 0);
  expect(&d, 1, "pinn.adam.lr", "0.001", "0.5", 0);
  expect(&d, 2, "pinn.slabs", "all", "causal", 0);
  tsr_case_changes_free(&d);
  tsr_case_destroy(&a);
  tsr_case_destroy(&b);
  /* an explicit case's pinn: section is checked and unused */
  char *lr[] = {"pinn.adam.lr=0.5"};
  a = load(base, 0, NULL);
  b = load(base, 1, lr);
  assert_int_equal(tsr_case_diff(a, b, &d), TSR_OK);
  assert_int_equal(d.n, 0);
  tsr_case_changes_free(&d);
  tsr_case_destroy(&a);
  tsr_case_destroy(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same),
      cmocka_unit_test(test_pinn_keys),
      cmocka_unit_test(test_params_and_exprs),
      cmocka_unit_test(test_time_end_and_steps),
      cmocka_unit_test(test_fatal),
      cmocka_unit_test(test_message),
      cmocka_unit_test(test_record),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
