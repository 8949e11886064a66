/* solver/schedule: writes by steps and by simulated time land on the documented steps, the
 * same from any restart step; and the case keys that give schedules (output.checkpoint_every,
 * output.snapshot_every, output.snapshot_precision) parse, or are refused with FILE:LINE:COL. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "io/case.h"
#include "solver/schedule.h"

/* The steps in [from + 1, to] at which e is due, written into out; returns their count. */
static int due_steps(const tsr_case_every *e, double dt, int64_t from, int64_t to, int64_t *out,
                     int max) {
  int n = 0;
  for (int64_t s = from + 1; s <= to; ++s)
    if (tsr_schedule_due(e, s, dt)) {
      if (n < max) out[n] = s;
      ++n;
    }
  return n;
}

static void test_steps(void **state) {
  (void)state;
  tsr_case_every e = {3, 0.0};
  int64_t got[16];
  assert_int_equal(due_steps(&e, 0.1, 0, 10, got, 16), 3);
  assert_true(got[0] == 3 && got[1] == 6 && got[2] == 9);
  assert_false(tsr_schedule_due(&e, 0, 0.1)); /* the initial state is no step */
  tsr_case_every none = {0, 0.0};
  assert_int_equal(due_steps(&none, 0.1, 0, 100, got, 16), 0);
  assert_false(tsr_schedule_due(NULL, 3, 0.1));
}

/* dt divides T: every multiple lands on its own step although step*dt is rounded (0.1 * 3 is
 * 0.30000000000000004, 0.1 * 7 is 0.7000000000000001, 0.05 * 5 is 0.25 only by luck) */
static void test_time_dividing(void **state) {
  (void)state;
  int64_t got[64];
  tsr_case_every e = {0, 0.3};
  int n = due_steps(&e, 0.1, 0, 30, got, 64);
  assert_int_equal(n, 10);
  for (int i = 0; i < n; ++i) assert_true(got[i] == 3 * (i + 1));
  e.time = 0.25;
  n = due_steps(&e, 0.05, 0, 100, got, 64);
  assert_int_equal(n, 20);
  for (int i = 0; i < n; ++i) assert_true(got[i] == 5 * (i + 1));
  /* a dt that is a third of T in no exact binary fraction */
  e.time = 1.0;
  n = due_steps(&e, 1.0 / 3.0, 0, 30, got, 64);
  assert_int_equal(n, 10);
  for (int i = 0; i < n; ++i) assert_true(got[i] == 3 * (i + 1));
  e.time = 0.7;
  n = due_steps(&e, 0.1, 0, 70, got, 64);
  assert_int_equal(n, 10);
  for (int i = 0; i < n; ++i) assert_true(got[i] == 7 * (i + 1));
}

/* dt does not divide T: the write follows the step whose end first passes each multiple */
static void test_time_between(void **state) {
  (void)state;
  int64_t got[16];
  tsr_case_every e = {0, 1.0};
  /* ends: 0.3 0.6 0.9 1.2 | 1.5 1.8 2.1 | 2.4 2.7 3.0 | 3.3 3.6 3.9 4.2 */
  assert_int_equal(due_steps(&e, 0.3, 0, 14, got, 16), 4);
  assert_true(got[0] == 4 && got[1] == 7 && got[2] == 10 && got[3] == 14);
  /* T smaller than dt: due after every step, once */
  e.time = 0.01;
  assert_int_equal(due_steps(&e, 0.3, 0, 5, got, 16), 5);
}

/* a restart at step s writes exactly the uninterrupted run's writes after s */
/* varying steps (method implicit's adaptive ones): due after the step that crosses each
 * multiple, once, whatever the steps' sizes; by steps as tsr_schedule_due */
static void test_time_varying_steps(void **state) {
  (void)state;
  tsr_case_every e = {0, 0.1};
  const double t[] = {0.0, 0.03, 0.07, 0.1 * 3 / 3, 0.13, 0.25, 0.31, 0.3999999999999, 0.55};
  const int want[] = {0, 0, 1, 0, 1, 1, 1, 1}; /* 0.1 * 3 / 3 reaches 0.1 (rounding) */
  int n = 0;
  for (int i = 1; i < 9; ++i) {
    assert_int_equal(tsr_schedule_due_after(&e, i, t[i - 1], t[i]), want[i - 1]);
    n += want[i - 1];
  }
  assert_int_equal(n, 5); /* 0.1, 0.2, 0.3, 0.4 (0.3999999999999 counts), 0.5 */
  assert_false(tsr_schedule_due_after(&e, 0, 0.0, 0.2)); /* the initial state is no step */
  assert_false(tsr_schedule_due_after(&e, 3, 0.2, 0.2));
  tsr_case_every by_steps = {2, 0.0};
  assert_true(tsr_schedule_due_after(&by_steps, 4, 0.0, 1e-9));
  assert_false(tsr_schedule_due_after(&by_steps, 5, 0.0, 10.0));
  assert_false(tsr_schedule_due_after(NULL, 4, 0.0, 1.0));
}

static void test_restart_independent(void **state) {
  (void)state;
  const tsr_case_every sched[] = {{0, 0.3}, {0, 1.0}, {4, 0.0}, {0, 0.07}};
  const double dts[] = {0.1, 0.3, 0.1, 0.013};
  for (int k = 0; k < 4; ++k) {
    int64_t all[256], part[256];
    int n = due_steps(&sched[k], dts[k], 0, 60, all, 256);
    for (int64_t s = 1; s < 60; ++s) {
      int m = due_steps(&sched[k], dts[k], s, 60, part, 256);
      int i0 = 0;
      while (i0 < n && all[i0] <= s) ++i0;
      assert_int_equal(m, n - i0);
      for (int i = 0; i < m; ++i) assert_true(part[i] == all[i0 + i]);
    }
  }
}

/* ---- the case keys ---------------------------------------------------------------------- */

static const char head[] = "model: heat\n"                 /* 1 */
                           "grid: {cells: [8, 8]}\n"       /* 2 */
                           "initial: {u: 0}\n"             /* 3 */
                           "time: {steps: 10}\n";          /* 4 */

static tsr_err load(const char *output, tsr_case **c) {
  char text[1024];
  snprintf(text, sizeof text, "%soutput:\n%s", head, output); /* output keys from line 6 */
  return tsr_case_load_string("s.yaml", text, 0, NULL, c);
}

static void test_case_keys(void **state) {
  (void)state;
  tsr_case *c = NULL;
  assert_int_equal(load("  checkpoint_every: 500\n", &c), TSR_OK);
  assert_true(c->output.checkpoint_every.steps == 500 && c->output.checkpoint_every.time == 0.0);
  assert_true(c->output.snapshot_every.steps == 0 && c->output.snapshot_every.time == 0.0);
  assert_int_equal(c->output.snapshot_single, 0);
  tsr_case_destroy(&c);
  assert_int_equal(load("  checkpoint_every: {steps: 7}\n  snapshot_every: {time: 0.25}\n"
                        "  snapshot_precision: single\n", &c), TSR_OK);
  assert_true(c->output.checkpoint_every.steps == 7);
  assert_true(c->output.snapshot_every.steps == 0 && c->output.snapshot_every.time == 0.25);
  assert_int_equal(c->output.snapshot_single, 1);
  tsr_case_destroy(&c);
  /* none turns off what the case file set */
  assert_int_equal(load("  checkpoint_every: none\n  snapshot_every: ~\n", &c), TSR_OK);
  assert_true(c->output.checkpoint_every.steps == 0 && c->output.checkpoint_every.time == 0.0);
  assert_true(c->output.snapshot_every.steps == 0 && c->output.snapshot_every.time == 0.0);
  tsr_case_destroy(&c);
  char *set[] = {"output.snapshot_every={time: 1e-3}", "output.checkpoint_every=4"};
  char text[512];
  snprintf(text, sizeof text, "%s", head);
  assert_int_equal(tsr_case_load_string("s.yaml", text, 2, set, &c), TSR_OK);
  assert_true(c->output.snapshot_every.time == 1e-3 && c->output.checkpoint_every.steps == 4);
  tsr_case_destroy(&c);
}

static void refused(const char *output, const char *want) {
  tsr_case *c = NULL;
  tsr_err err = load(output, &c);
  if (err != TSR_ERR_INPUT || !strstr(tsr_err_message(), want))
    fprintf(stderr, "for:\n%sgot (%d): %s\nwanted: %s\n", output, (int)err, tsr_err_message(),
            want);
  assert_int_equal(err, TSR_ERR_INPUT);
  assert_non_null(strstr(tsr_err_message(), want));
  assert_null(c);
}

static void test_case_keys_refused(void **state) {
  (void)state;
  refused("  checkpoint_every: 0\n", "s.yaml:6:21: output.checkpoint_every: must be >= 1 steps, got 0");
  refused("  snapshot_every: -3\n", "s.yaml:6:19: output.snapshot_every: must be >= 1 steps, got -3");
  refused("  checkpoint_every: 0.25\n",
          "s.yaml:6:21: output.checkpoint_every: expected an integer number of steps, got '0.25'; "
          "for simulated time write {time: 0.25}");
  refused("  snapshot_every: {time: 0}\n",
          "s.yaml:6:26: output.snapshot_every.time: must be > 0 (simulated time between writes), got 0");
  refused("  snapshot_every: {time: -1.5}\n", "output.snapshot_every.time: must be > 0");
  refused("  checkpoint_every: {steps: 0}\n", "s.yaml:6:29: output.checkpoint_every.steps: must be >= 1, got 0");
  refused("  checkpoint_every: {steps: 5, time: 0.1}\n",
          "s.yaml:6:32: output.checkpoint_every: give either steps or time, not both");
  refused("  snapshot_every: {tme: 0.1}\n",
          "s.yaml:6:20: unknown key 'output.snapshot_every.tme' (did you mean "
          "'output.snapshot_every.time'?)");
  refused("  snapshot_every: {stpes: 3}\n", "(did you mean 'output.snapshot_every.steps'?)");
  refused("  checkpoint_every: {}\n", "s.yaml:6:3: output.checkpoint_every: expected {steps: N} or {time: T}, got an empty map");
  refused("  checkpoint_every: [1, 2]\n", "s.yaml:6:21: output.checkpoint_every: expected a number of steps (e.g. 500), {steps: 500}, {time: 0.25} or none");
  refused("  snapshot_every: {time: soon}\n", "output.snapshot_every.time: expected a number, got 'soon'");
  refused("  snapshot_precision: half\n",
          "s.yaml:6:23: output.snapshot_precision: unknown value 'half'; expected one of double, single");
  refused("  snapshot_evry: 3\n", "unknown key 'output.snapshot_evry' (did you mean 'output.snapshot_every'?)");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_steps),
      cmocka_unit_test(test_time_dividing),
      cmocka_unit_test(test_time_between),
      cmocka_unit_test(test_time_varying_steps),
      cmocka_unit_test(test_restart_independent),
      cmocka_unit_test(test_case_keys),
      cmocka_unit_test(test_case_keys_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
