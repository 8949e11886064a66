/* solver/fault and solver/supervise, the parts without processes: --inject-fault specs parse
 * or are refused with a message naming what is wrong; faults that cannot fire in a run are
 * refused; supervise's arguments, the rank count it finds in a launch command, the relaunch
 * command it builds (--restart latest, a new -np), the GPU probe's command and how its answer
 * is read, and the rank count it shrinks to. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "solver/env.h"
#include "solver/fault.h"
#include "solver/stop.h"
#include "solver/supervise.h"

static void test_fault_parse(void **state) {
  (void)state;
  tsr_fault f;
  assert_int_equal(tsr_fault_parse("rank=1,step=5,kind=exit", &f), TSR_OK);
  assert_int_equal(f.kind, TSR_FAULT_EXIT);
  assert_int_equal(f.rank, 1);
  assert_int_equal(f.step, 5);
  assert_int_equal(tsr_fault_parse("kind=enospc,step=12", &f), TSR_OK);
  assert_int_equal(f.kind, TSR_FAULT_ENOSPC);
  assert_int_equal(f.rank, 0);
  assert_int_equal(f.step, 12);
  assert_int_equal(tsr_fault_parse("step=3,kind=hang,rank=2", &f), TSR_OK);
  assert_int_equal(f.kind, TSR_FAULT_HANG);
  assert_int_equal(tsr_fault_parse("rank=0,step=3,kind=corrupt", &f), TSR_OK);
  assert_int_equal(f.kind, TSR_FAULT_CORRUPT);
  assert_string_equal(tsr_fault_kind_name(TSR_FAULT_CORRUPT), "corrupt");
  assert_int_equal(tsr_fault_parse("rank=1,step=2,kind=graph", &f), TSR_OK);
  assert_int_equal(f.kind, TSR_FAULT_GRAPH);
  assert_string_equal(tsr_fault_kind_name(TSR_FAULT_GRAPH), "graph");
  assert_int_equal(tsr_fault_parse("rank=1,step=0,kind=signal", &f), TSR_OK);
  assert_int_equal(f.kind, TSR_FAULT_SIGNAL);
  assert_int_equal(f.step, 0);
}

/* --walltime's forms (solver/stop.h) */
static void test_walltime_parse(void **state) {
  (void)state;
  double s = 0;
  assert_int_equal(tsr_stop_parse_walltime("01:30:00", &s), 0);
  assert_true(s == 5400.0);
  assert_int_equal(tsr_stop_parse_walltime("2-00:00:10", &s), 0);
  assert_true(s == 172810.0);
  assert_int_equal(tsr_stop_parse_walltime("1-02:30", &s), 0); /* D-HH:MM, as Slurm reads it */
  assert_true(s == 86400.0 + 9000.0);
  assert_int_equal(tsr_stop_parse_walltime("1-02", &s), 0);
  assert_true(s == 86400.0 + 7200.0);
  assert_int_equal(tsr_stop_parse_walltime("05:30", &s), 0);
  assert_true(s == 330.0);
  assert_int_equal(tsr_stop_parse_walltime("90", &s), 0);
  assert_true(s == 90.0);
  static const char *const bad[] = {"", "0", "1:2:3:4", "01:61:00", "00:00:75", "1h", "-5",
                                    "1-", "01::00", " 10", "1-24:00",
                                    "1-02:61"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i)
    if (tsr_stop_parse_walltime(bad[i], &s) == 0) fail_msg("'%s' parsed as %g s", bad[i], s);
}

static void test_fault_parse_bad(void **state) {
  (void)state;
  static const struct {
    const char *spec, *want;
  } bad[] = {
      {"", "needs a value"},
      {"rank=1,step=5", "kind=K is missing"},
      {"rank=1,kind=exit", "step=S is missing"},
      {"rank=1,step=5,kind=explode", "unknown kind 'explode'"},
      {"rank=1,step=0,kind=exit", "step=0, before the first step, is for kind=signal"},
      {"rank=-1,step=2,kind=exit", "rank must be an integer >= 0, got '-1'"},
      {"rank=x,step=2,kind=exit", "rank must be an integer >= 0, got 'x'"},
      {"rank=1,step=2.5,kind=exit", "step must be an integer >= 1 (0 with kind=signal), got '2.5'"},
      {"rank=1,step=2,kind=exit,when=now", "unknown key 'when'"},
      {"rank=1,step=2,kind=exit,step=3", "step is given twice"},
      {"rank=1,step=2,exit", "expected KEY=VALUE, got 'exit'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
    tsr_fault f;
    tsr_err err = tsr_fault_parse(bad[i].spec, &f);
    const char *msg = tsr_err_message();
    if (err != TSR_ERR_INPUT || !strstr(msg, bad[i].want) ||
        (*bad[i].spec && !strstr(msg, "expected rank=R,step=S,kind=exit|hang|corrupt|enospc")))
      fail_msg("spec '%s': code %d, message '%s', wanted '%s'", bad[i].spec, (int)err, msg,
               bad[i].want);
  }
}

static void test_fault_check(void **state) {
  (void)state;
  tsr_fault f = {TSR_FAULT_EXIT, 1, 5};
  const tsr_case_every none = {0, 0.0}, three = {3, 0.0}, four = {4, 0.0};
  assert_int_equal(tsr_fault_check(&f, 2, 12, &none, 0.1), TSR_OK);
  assert_int_equal(tsr_fault_check(NULL, 2, 12, &none, 0.1), TSR_OK);
  assert_int_equal(tsr_fault_check(&f, 1, 12, &none, 0.1), TSR_ERR_INPUT);
  assert_non_null(strstr(tsr_err_message(), "rank=1 but the run has 1 rank (0..0)"));
  f.step = 13;
  assert_int_equal(tsr_fault_check(&f, 2, 12, &none, 0.1), TSR_ERR_INPUT);
  assert_non_null(strstr(tsr_err_message(), "step=13 but the run has 12 steps"));
  tsr_fault c = {TSR_FAULT_CORRUPT, 0, 6};
  assert_int_equal(tsr_fault_check(&c, 2, 12, &three, 0.1), TSR_OK);
  assert_int_equal(tsr_fault_check(&c, 2, 12, &four, 0.1), TSR_ERR_INPUT);
  assert_non_null(strstr(tsr_err_message(), "kind=corrupt needs a step that writes a checkpoint"));
  assert_int_equal(tsr_fault_check(&c, 2, 12, &none, 0.1), TSR_ERR_INPUT);
  assert_int_equal(tsr_fault_check(&c, 2, 12, NULL, 0.1), TSR_ERR_INPUT);
  c.step = 12; /* no checkpoint at the last step */
  assert_int_equal(tsr_fault_check(&c, 2, 12, &three, 0.1), TSR_ERR_INPUT);
}

static void test_fault_armed(void **state) {
  (void)state;
  unsetenv("TESSERA_ATTEMPT");
  assert_int_equal(tsr_fault_armed(), 1);
  setenv("TESSERA_ATTEMPT", "1", 1);
  assert_int_equal(tsr_fault_armed(), 1);
  setenv("TESSERA_ATTEMPT", "2", 1);
  assert_int_equal(tsr_fault_armed(), 0);
  unsetenv("TESSERA_ATTEMPT");
}

/* solver/env.c: each kind of value refused and taken, by name in the message */
static void test_env_check(void **state) {
  (void)state;
  assert_int_equal(tsr_env_check(0), TSR_OK);
  const struct {
    const char *name, *value;
    int ok;
  } cases[] = {
      {"TESSERA_TIME_TILES", "off", 1},     {"TESSERA_TIME_TILES", "on", 1},
      {"TESSERA_TIME_TILES", "", 1},        {"TESSERA_TIME_TILES", "Off", 0},
      {"TESSERA_PROBE_TIMEOUT", "86400", 1}, {"TESSERA_PROBE_TIMEOUT", "86401", 0},
      {"TESSERA_PROBE_TIMEOUT", "0", 0},    {"TESSERA_PROBE_TIMEOUT", " 5", 0},
      {"TSR_PINN_PROFILE", "0", 1},         {"TSR_PINN_PROFILE", "-1", 0},
      {"TSR_NET_FUSED", "2", 1},            {"TSR_NET_FUSED", "22", 0},
      {"TESSERA_ATTEMPT", "3", 1},          {"TESSERA_ATTEMPT", "x", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    setenv(cases[i].name, cases[i].value, 1);
    const tsr_err e = tsr_env_check(0);
    if (cases[i].ok) {
      assert_int_equal(e, TSR_OK);
    } else {
      assert_int_equal(e, TSR_ERR_INPUT);
      assert_non_null(strstr(tsr_err_message(), cases[i].name));
    }
    unsetenv(cases[i].name);
  }
  /* supervise sets TESSERA_ATTEMPT itself */
  setenv("TESSERA_ATTEMPT", "x", 1);
  assert_int_equal(tsr_env_check(1), TSR_OK);
  unsetenv("TESSERA_ATTEMPT");
}

static int parse(tsr_supervise_opts *o, int n, char **argv) { return tsr_supervise_parse(n, argv, o); }

static void test_supervise_parse(void **state) {
  (void)state;
  tsr_supervise_opts o;
  char *a1[] = {"supervise", "--", "mpirun", "-np", "2", "tessera", "run", "c.yaml"};
  assert_int_equal(parse(&o, 8, a1), 0);
  assert_int_equal(o.max_restarts, 3);
  assert_int_equal(o.first, 2);
  char *a2[] = {"supervise", "--max-restarts", "5", "--", "tessera", "run", "c.yaml"};
  assert_int_equal(parse(&o, 7, a2), 0);
  assert_int_equal(o.max_restarts, 5);
  assert_int_equal(o.first, 4);
  char *a3[] = {"supervise", "--max-restarts=0", "--", "x"};
  assert_int_equal(parse(&o, 4, a3), 0);
  assert_int_equal(o.max_restarts, 0);
  char *b1[] = {"supervise", "mpirun", "-np", "2"};
  assert_int_equal(parse(&o, 4, b1), 2);
  char *b2[] = {"supervise", "--"};
  assert_int_equal(parse(&o, 2, b2), 2);
  char *b3[] = {"supervise", "--max-restarts", "-1", "--", "x"};
  assert_int_equal(parse(&o, 5, b3), 2);
  char *b4[] = {"supervise", "--max-restarts", "--", "x"};
  assert_int_equal(parse(&o, 4, b4), 2);
  char *b5[] = {"supervise", "--retries", "2", "--", "x"};
  assert_int_equal(parse(&o, 5, b5), 2);
  char *b6[] = {"supervise"};
  assert_int_equal(parse(&o, 1, b6), 2);
}

static void test_supervise_ranks(void **state) {
  (void)state;
  int at;
  char *m[] = {"mpirun", "--oversubscribe", "-np", "4", "tessera", "run", "c.yaml"};
  assert_int_equal(tsr_supervise_ranks(7, m, &at), 4);
  assert_int_equal(at, 3);
  char *s[] = {"srun", "--ntasks=8", "tessera", "run", "c.yaml"};
  assert_int_equal(tsr_supervise_ranks(5, s, &at), 8);
  assert_int_equal(at, 1);
  /* tessera's own arguments after run are not the launcher's */
  char *t[] = {"tessera", "run", "c.yaml", "-n", "3"};
  assert_int_equal(tsr_supervise_ranks(5, t, &at), 0);
  assert_int_equal(at, -1);
}

static int count(char **v) {
  int n = 0;
  while (v[n]) ++n;
  return n;
}

static void test_supervise_argv(void **state) {
  (void)state;
  char *m[] = {"mpirun", "-n", "3", "tessera", "run", "c.yaml", "--out", "d"};
  char **r = tsr_supervise_argv(8, m, 0);
  assert_int_equal(count(r), 10);
  assert_string_equal(r[2], "3");
  assert_string_equal(r[8], "--restart");
  assert_string_equal(r[9], "latest");
  tsr_supervise_argv_free(r);
  r = tsr_supervise_argv(8, m, 2);
  assert_string_equal(r[1], "-n");
  assert_string_equal(r[2], "2");
  tsr_supervise_argv_free(r);
  /* an explicit --restart is replaced, not doubled */
  char *x[] = {"mpirun", "-np", "2", "tessera", "run", "c.yaml", "--restart", "old.h5", "--out", "d"};
  r = tsr_supervise_argv(10, x, 0);
  assert_int_equal(count(r), 10);
  assert_string_equal(r[6], "--restart");
  assert_string_equal(r[7], "latest");
  assert_string_equal(r[9], "d");
  tsr_supervise_argv_free(r);
  char *y[] = {"srun", "--ntasks=8", "tessera", "run", "c.yaml", "--restart=old.h5"};
  r = tsr_supervise_argv(6, y, 6);
  assert_int_equal(count(r), 6);
  assert_string_equal(r[1], "--ntasks=6");
  assert_string_equal(r[5], "--restart=latest");
  tsr_supervise_argv_free(r);
}

static void test_supervise_shrink(void **state) {
  (void)state;
  assert_int_equal(tsr_supervise_shrink(4, 4, 4), 4);   /* nothing lost */
  assert_int_equal(tsr_supervise_shrink(4, 4, 3), 3);   /* one GPU lost, on any node */
  assert_int_equal(tsr_supervise_shrink(16, 16, 15), 15);
  assert_int_equal(tsr_supervise_shrink(2, 8, 7), 2);   /* enough left */
  assert_int_equal(tsr_supervise_shrink(4, -1, -1), 4); /* no count */
  assert_int_equal(tsr_supervise_shrink(4, 4, -1), 4);  /* the probe failed this time */
  assert_int_equal(tsr_supervise_shrink(4, 0, 0), 4);   /* no GPUs: CPU ranks */
  assert_int_equal(tsr_supervise_shrink(16, 8, 7), 16); /* more ranks than GPUs: host backend */
  assert_int_equal(tsr_supervise_shrink(4, 4, 0), 0);   /* none left */
  assert_int_equal(tsr_supervise_shrink(0, 4, 2), 0);   /* no rank count in the command */
}

static void test_supervise_probe_argv(void **state) {
  (void)state;
  char *m[] = {"mpirun", "-np", "4", "-x", "A", "wrap.sh", "tessera", "run", "c.yaml", "--out", "d"};
  char **r = tsr_supervise_probe_argv(11, m);
  assert_non_null(r);
  assert_int_equal(count(r), 8);
  assert_string_equal(r[5], "wrap.sh");
  assert_string_equal(r[6], "tessera");
  assert_string_equal(r[7], "probe");
  tsr_supervise_argv_free(r);
  char *t[] = {"tessera", "run", "c.yaml"};
  r = tsr_supervise_probe_argv(3, t);
  assert_int_equal(count(r), 2);
  assert_string_equal(r[1], "probe");
  tsr_supervise_argv_free(r);
  char *b[] = {"bash", "-c", "exit 3"}; /* runs no tessera: nothing to probe with */
  assert_null(tsr_supervise_probe_argv(3, b));
}

static void test_supervise_gpus_parse(void **state) {
  (void)state;
  tsr_supervise_gpus g;
  const char *ok = "noise from a launcher\n"
                   "tessera probe: node gpu-a17: 4 of 4 GPUs usable\n"
                   "tessera probe: node gpu-b03: 3 of 4 GPUs usable\n"
                   "tessera probe: total 7 of 8 GPUs usable on 2 nodes\n";
  assert_int_equal(tsr_supervise_gpus_parse(ok, &g), 1);
  assert_int_equal(g.nodes, 2);
  assert_int_equal(g.usable, 7);
  assert_int_equal(g.n, 2);
  assert_string_equal(g.node[1].name, "gpu-b03");
  assert_int_equal(g.node[1].usable, 3);
  assert_int_equal(g.node[1].seen, 4);
  tsr_supervise_gpus_free(&g);
  /* a total without every node's line, no total, nothing */
  assert_int_equal(tsr_supervise_gpus_parse("tessera probe: node a: 4 of 4 GPUs usable\n"
                                            "tessera probe: total 8 of 8 GPUs usable on 2 nodes",
                                            &g), 0);
  tsr_supervise_gpus_free(&g);
  assert_int_equal(tsr_supervise_gpus_parse("tessera probe: node a: 4 of 4 GPUs usable\n", &g), 0);
  tsr_supervise_gpus_free(&g);
  assert_int_equal(tsr_supervise_gpus_parse("", &g), 0);
  tsr_supervise_gpus_free(&g);
}

static void test_supervise_gpus_lost(void **state) {
  (void)state;
  tsr_supervise_node before[] = {{"a", 4, 4}, {"b", 4, 4}, {"c", 4, 4}};
  tsr_supervise_node after[] = {{"c", 4, 4}, {"b", 3, 4}};
  tsr_supervise_gpus g0 = {3, 12, 3, 3, before}, g = {2, 7, 2, 2, after};
  char buf[256];
  tsr_supervise_gpus_lost(&g0, &g, buf, sizeof buf);
  assert_string_equal(buf, "a: not reached, b: 3 of 4 usable (had 4)");
  tsr_supervise_gpus_lost(&g0, &g0, buf, sizeof buf);
  assert_string_equal(buf, "");
  tsr_supervise_gpus_hosts(&g, buf, sizeof buf);
  assert_string_equal(buf, "c:4,b:3");
  after[0].usable = 0; /* a node with no GPU left gets no slot */
  tsr_supervise_gpus_hosts(&g, buf, sizeof buf);
  assert_string_equal(buf, "b:3");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fault_parse),      cmocka_unit_test(test_walltime_parse),
      cmocka_unit_test(test_fault_parse_bad),  cmocka_unit_test(test_fault_check),
      cmocka_unit_test(test_fault_armed),      cmocka_unit_test(test_env_check),
      cmocka_unit_test(test_supervise_parse),  cmocka_unit_test(test_supervise_ranks),
      cmocka_unit_test(test_supervise_argv),   cmocka_unit_test(test_supervise_shrink),
      cmocka_unit_test(test_supervise_probe_argv), cmocka_unit_test(test_supervise_gpus_parse),
      cmocka_unit_test(test_supervise_gpus_lost),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
