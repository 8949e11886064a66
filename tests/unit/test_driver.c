/* solver/driver.c: the one sequence every method runs through (solver/method.h), driven with a
 * method of the test's own that logs its hooks and fails or stops where told: the order of the
 * hooks, teardown after every failure, finish only for a run that completed with output, the
 * output directory made after set-up and removed after an error (each level of it that the run
 * made, while empty), and a relaunch
 * under tessera supervise that failed before its first checkpoint starting over. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "solver/method.h"
#include "solver/run_internal.h"

static struct {
  char log[512];
  const char *fail; /* the hook that fails (NULL: none) */
  int stop;         /* advance stops the run (a signal) */
} M;
static int litter; /* advance leaves a file beside the output directory */

static void note(const char *what) {
  strncat(M.log, what, sizeof M.log - strlen(M.log) - 2);
  strcat(M.log, " ");
}

static tsr_err hook(const char *what) {
  note(what);
  if (M.fail && !strcmp(M.fail, what))
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "%s failed on purpose", what);
  return TSR_OK;
}

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static tsr_err m_setup(tsr_run_ctx *x) {
  x->method = malloc(64); /* teardown frees it (the sanitizers' leak check sees one missed) */
  return hook("setup");
}

static int m_peers(const tsr_run_ctx *x, int *peers, int max) {
  (void)x, (void)peers, (void)max;
  note("peers");
  return -1;
}

static tsr_err m_start(tsr_run_ctx *x) {
  note(x->opts.restart ? "restart" : "initial");
  return hook("start");
}

static tsr_err m_advance(tsr_run_ctx *x, tsr_run_result *res) {
  res->steps = 7;
  res->stopped = M.stop;
  if (litter) {
    char path[160];
    snprintf(path, sizeof path, "%.*s/litter", (int)(strrchr(x->out_dir, '/') - x->out_dir),
             x->out_dir);
    FILE *fp = fopen(path, "w");
    if (fp) fclose(fp);
  }
  return hook("advance");
}

static tsr_err m_finish(tsr_run_ctx *x, tsr_run_result *res) {
  (void)res;
  if (is_dir(x->out_dir)) note("dir");
  return hook("finish");
}

static void m_teardown(tsr_run_ctx *x) {
  note("teardown");
  free(x->method);
  x->method = NULL;
}

static const tsr_method_ops mock = {.setup = m_setup,
                                    .peers = m_peers,
                                    .start = m_start,
                                    .advance = m_advance,
                                    .finish = m_finish,
                                    .teardown = m_teardown};

static char base[64], out[96];

/* Runs the mock with options o after a fresh output path (o.out_dir, when set, goes below it:
 * "/a/b"); returns the driver's error. */
static tsr_err drive(tsr_run_opts o, const char *fail, int stop, tsr_run_result *res) {
  static int n;
  snprintf(out, sizeof out, "%s/out%d%s", base, n++, o.out_dir ? o.out_dir : "");
  memset(&M, 0, sizeof M);
  M.fail = fail;
  M.stop = stop;
  o.out_dir = out;
  o.quiet = 1;
  tsr_case *c = NULL;
  assert_int_equal(tsr_case_load_string("driver.yaml",
                                        "model: heat\ngrid: {cells: [8, 8]}\n"
                                        "initial: {u: \"0\"}\ntime: {end: 0.01}\n",
                                        0, NULL, &c),
                   TSR_OK);
  tsr_err err = tsr_run_method(c, MPI_COMM_WORLD, &o, &mock, res);
  tsr_case_destroy(&c);
  return err;
}

static void sequence_complete(void **state) {
  (void)state;
  tsr_run_result r;
  assert_int_equal(drive(tsr_run_opts_default(), NULL, 0, &r), TSR_OK);
  assert_string_equal(M.log, "setup peers initial start advance dir finish teardown ");
  assert_int_equal(r.steps, 7);
  assert_true(is_dir(out));
  rmdir(out);
}

/* a case refused in a method's set-up: nothing on the disk, and its state freed */
static void setup_fails(void **state) {
  (void)state;
  tsr_run_result r;
  assert_int_equal(drive(tsr_run_opts_default(), "setup", 0, &r), TSR_ERR_INPUT);
  assert_string_equal(M.log, "setup teardown ");
  assert_non_null(strstr(tsr_err_message(), "setup failed on purpose"));
  assert_false(is_dir(out));
}

/* the output directory it made, empty, goes again */
static void start_fails(void **state) {
  (void)state;
  tsr_run_result r;
  assert_int_equal(drive(tsr_run_opts_default(), "start", 0, &r), TSR_ERR_INPUT);
  assert_string_equal(M.log, "setup peers initial start teardown ");
  assert_false(is_dir(out));
}

static void advance_fails(void **state) {
  (void)state;
  tsr_run_result r;
  assert_int_equal(drive(tsr_run_opts_default(), "advance", 0, &r), TSR_ERR_INPUT);
  assert_string_equal(M.log, "setup peers initial start advance teardown ");
  assert_false(is_dir(out));
}

/* a new path goes again whole, every level the run made (it made four: out<n>/a/b/c) ... */
static void deep_path_fails(void **state) {
  (void)state;
  tsr_run_opts o = tsr_run_opts_default();
  o.out_dir = "/a/b/c";
  tsr_run_result r;
  assert_int_equal(drive(o, "advance", 0, &r), TSR_ERR_INPUT);
  char top[96];
  snprintf(top, sizeof top, "%.*s", (int)(strlen(out) - strlen(o.out_dir)), out);
  assert_false(is_dir(top));
  assert_true(is_dir(base));
}

/* ... but only while empty: a file left in b keeps b and the levels above it */
static void deep_path_fails_litter(void **state) {
  (void)state;
  tsr_run_opts o = tsr_run_opts_default();
  o.out_dir = "/a/b/c";
  tsr_run_result r;
  litter = 1;
  tsr_err err = drive(o, "advance", 0, &r);
  litter = 0;
  assert_int_equal(err, TSR_ERR_INPUT);
  assert_false(is_dir(out));
  *strrchr(out, '/') = '\0';
  char path[160];
  snprintf(path, sizeof path, "%s/litter", out);
  assert_int_equal(remove(path), 0);
  for (int k = 0; k < 3; ++k) { /* b, a, out<n> are there, and empty now */
    assert_int_equal(rmdir(out), 0);
    *strrchr(out, '/') = '\0';
  }
}

/* a stopped run's checkpoint holds its state: no final files, and the directory stays */
static void stopped_no_finish(void **state) {
  (void)state;
  tsr_run_result r;
  assert_int_equal(drive(tsr_run_opts_default(), NULL, 1, &r), TSR_OK);
  assert_string_equal(M.log, "setup peers initial start advance teardown ");
  assert_int_equal(r.stopped, 1);
  assert_true(is_dir(out));
  rmdir(out);
}

static void no_output(void **state) {
  (void)state;
  tsr_run_opts o = tsr_run_opts_default();
  o.write_output = 0;
  tsr_run_result r;
  assert_int_equal(drive(o, NULL, 0, &r), TSR_OK);
  assert_string_equal(M.log, "setup peers initial start advance teardown ");
  assert_false(is_dir(out));
}

/* --restart latest: a first launch restarts (the method refuses an empty directory itself);
 * supervise's relaunch (TESSERA_ATTEMPT 2) with no checkpoint yet starts over */
static void relaunch_starts_over(void **state) {
  (void)state;
  tsr_run_opts o = tsr_run_opts_default();
  o.restart = "latest";
  tsr_run_result r;
  assert_int_equal(drive(o, NULL, 0, &r), TSR_OK);
  assert_string_equal(M.log, "setup peers restart start advance dir finish teardown ");
  rmdir(out);
  setenv("TESSERA_ATTEMPT", "2", 1);
  assert_int_equal(drive(o, NULL, 0, &r), TSR_OK);
  unsetenv("TESSERA_ATTEMPT");
  assert_string_equal(M.log, "setup peers initial start advance dir finish teardown ");
  rmdir(out);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  snprintf(base, sizeof base, "/tmp/tsr_driver_XXXXXX");
  if (!mkdtemp(base)) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sequence_complete), cmocka_unit_test(setup_fails),
      cmocka_unit_test(start_fails),       cmocka_unit_test(advance_fails),
      cmocka_unit_test(deep_path_fails),   cmocka_unit_test(deep_path_fails_litter),
      cmocka_unit_test(stopped_no_finish), cmocka_unit_test(no_output),
      cmocka_unit_test(relaunch_starts_over),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  rmdir(base);
  MPI_Finalize();
  return rc;
}
