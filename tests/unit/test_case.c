/* io/case: a full case parses to the right values, overrides apply, and every kind of bad input
 * is refused with a message naming where (FILE:LINE:COL or --set) and which key. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "io/case.h"
#include "io/text.h"

static const char full_case[] =
    "# a 2D wave on a strip, periodic in x\n"         /* 1 */
    "model: wave\n"                                   /* 2 */
    "grid:\n"                                         /* 3 */
    "  cells: [32, 16]\n"                             /* 4 */
    "  lo: [0, -1]\n"                                 /* 5 */
    "  hi: [2, 1]\n"                                  /* 6 */
    "  periodic: [true, false]\n"                     /* 7 */
    "params:\n"                                       /* 8 */
    "  amp: 0.5\n"                                    /* 9 */
    "initial:\n"                                      /* 10 */
    "  u: \"amp*sin(pi*x)\"\n"                        /* 11 */
    "  v: 0\n"                                        /* 12 */
    "source: {v: '0'}\n"                              /* 13 */
    "boundary:\n"                                     /* 14 */
    "  default: {type: neumann}\n"                    /* 15 */
    "  ylo: {type: dirichlet, value: {u: 1, v: 0}}\n" /* 16 */
    "time:\n"                                         /* 17 */
    "  scheme: rk2\n"                                 /* 18 */
    "  end: 0.5\n"                                    /* 19 */
    "decomposition:\n"                                /* 20 */
    "  partition: slabs\n"                            /* 21 */
    "  weights: [1, 2.5]\n"                           /* 22 */
    "output:\n"                                       /* 23 */
    "  progress: lines\n";                            /* 24 */

static tsr_case *load_ok(const char *name, const char *text, int n, char *const *set) {
  tsr_case *c = NULL;
  tsr_err err = tsr_case_load_string(name, text, n, set, &c);
  if (err) fprintf(stderr, "unexpected error: %s\n", tsr_err_message());
  assert_int_equal(err, TSR_OK);
  assert_non_null(c);
  return c;
}

static void test_full_case(void **state) {
  (void)state;
  tsr_case *c = load_ok("cases/wave2d.yaml", full_case, 0, NULL);
  assert_string_equal(c->name, "wave2d");
  assert_string_equal(c->text, full_case);
  assert_int_equal(c->model, TSR_MODEL_WAVE);
  assert_int_equal(c->ncomp, 2);
  assert_int_equal(c->method, TSR_METHOD_EXPLICIT);
  assert_int_equal(c->backend, TSR_BACKEND_AUTO);
  assert_int_equal(c->dim, 2);
  assert_int_equal(c->cells[0], 32);
  assert_int_equal(c->cells[1], 16);
  assert_int_equal(c->cells[2], 1);
  assert_true(c->lo[1] == -1.0 && c->hi[0] == 2.0 && c->hi[2] == 1.0);
  assert_int_equal(c->periodic[0], 1);
  assert_int_equal(c->periodic[1], 0);

  /* the model's params first, with defaults; then the case's own */
  assert_int_equal(c->nparam, 2);
  assert_string_equal(c->param_name[0], "c");
  assert_true(c->param_value[0] == 1.0);
  assert_int_equal(c->param_loc[0].line, 0);
  assert_string_equal(c->param_name[1], "amp");
  assert_true(tsr_case_param(c, "amp") == 0.5);
  assert_int_equal(c->param_loc[1].line, 9);
  assert_int_equal(c->param_loc[1].col, 8);

  assert_string_equal(c->initial[0].text, "amp*sin(pi*x)");
  assert_string_equal(c->initial[0].key, "initial.u");
  assert_ptr_equal(c->initial[0].loc.file, c->path);
  assert_int_equal(c->initial[0].loc.line, 11);
  assert_int_equal(c->initial[0].loc.col, 7); /* past the quote */
  char where[128];
  assert_string_equal(tsr_case_loc_str(&c->initial[0].loc, where, sizeof where),
                      "cases/wave2d.yaml:11:7");
  assert_string_equal(tsr_case_loc_str(&c->param_loc[0], where, sizeof where), "(default)");
  assert_string_equal(c->initial[1].text, "0");
  assert_null(c->source[0].text);
  assert_string_equal(c->source[1].text, "0");
  assert_null(c->exact[0].text);

  assert_int_equal(c->bc[0].type, TSR_BC_PERIODIC);
  assert_int_equal(c->bc[1].type, TSR_BC_PERIODIC);
  assert_int_equal(c->bc[2].type, TSR_BC_DIRICHLET);
  assert_string_equal(c->bc[2].value[0].text, "1");
  assert_string_equal(c->bc[2].value[0].key, "boundary.ylo.value.u");
  assert_string_equal(c->bc[2].value[1].text, "0");
  assert_int_equal(c->bc[3].type, TSR_BC_NEUMANN); /* from default */
  assert_string_equal(c->bc[3].value[1].text, "0");

  assert_int_equal(c->time.scheme, TSR_SCHEME_SSPRK2);
  assert_int_equal(c->time.dt_auto, 1);
  assert_true(c->time.cfl == 0.9);
  assert_int_equal(c->time.has_end, 1);
  assert_true(c->time.end == 0.5);
  assert_int_equal(c->time.has_steps, 0);

  assert_int_equal(c->decomp.partition, TSR_PART_SLABS);
  assert_int_equal(c->decomp.nweights, 2);
  assert_true(c->decomp.weights[1] == 2.5);
  assert_int_equal(c->decomp.time_slices, 1);
  assert_string_equal(c->output.dir, "out/wave2d");
  assert_int_equal(c->output.monitor_every, 0);
  assert_int_equal(c->output.progress, TSR_PROGRESS_LINES);
  tsr_case_destroy(&c);
  assert_null(c);
  tsr_case_destroy(&c); /* accepts NULL */
}

static void test_3d_case(void **state) {
  (void)state;
  const char *text = "name: cube-1\n"
                     "model: heat\n"
                     "backend: host\n"
                     "grid: {cells: [8, 8, 4], periodic: no}\n"
                     "params: {kappa: 0.25}\n"
                     "initial: {u: 1}\n"
                     "exact: {u: exp(-t)}\n"
                     "boundary:\n"
                     "  zlo: {type: periodic}\n"
                     "  zhi: {type: periodic}\n"
                     "  xlo: {type: neumann, value: x*y}\n"
                     "time: {scheme: rk4, dt: 1e-3, cfl: 1, steps: 10}\n"
                     "decomposition: {ranks: [2, 1, 1]}\n"
                     "output: {dir: results, monitor_every: 5}\n";
  tsr_case *c = load_ok("heat.yaml", text, 0, NULL);
  assert_string_equal(c->name, "cube-1");
  assert_int_equal(c->backend, TSR_BACKEND_HOST);
  assert_int_equal(c->dim, 3);
  assert_int_equal(c->cells[2], 4);
  assert_int_equal(c->periodic[2], 1); /* from the faces */
  assert_int_equal(c->periodic[0], 0);
  assert_true(tsr_case_param(c, "kappa") == 0.25);
  assert_int_equal(c->nparam, 1);
  assert_string_equal(c->exact[0].text, "exp(-t)");
  assert_int_equal(c->bc[4].type, TSR_BC_PERIODIC);
  assert_int_equal(c->bc[5].type, TSR_BC_PERIODIC);
  assert_int_equal(c->bc[0].type, TSR_BC_NEUMANN);
  assert_string_equal(c->bc[0].value[0].text, "x*y");
  assert_string_equal(c->bc[0].value[0].key, "boundary.xlo.value");
  assert_int_equal(c->bc[1].type, TSR_BC_DIRICHLET); /* no default: dirichlet 0 */
  assert_string_equal(c->bc[1].value[0].text, "0");
  assert_int_equal(c->time.scheme, TSR_SCHEME_RK4);
  assert_int_equal(c->time.dt_auto, 0);
  assert_true(c->time.dt == 1e-3 && c->time.cfl == 1.0);
  assert_int_equal(c->time.has_steps, 1);
  assert_int_equal(c->time.steps, 10);
  assert_int_equal(c->decomp.partition, TSR_PART_GRID);
  assert_int_equal(c->decomp.ranks[0], 2);
  assert_string_equal(c->output.dir, "results");
  assert_int_equal(c->output.monitor_every, 5);
  assert_int_equal(tsr_case_face("zhi"), 5);
  assert_int_equal(tsr_case_face("top"), -1);
  tsr_case_destroy(&c);
}

static const char base[] = "model: heat\n"
                           "grid: {cells: [16, 16]}\n"
                           "initial: {u: sin(pi*x)}\n"
                           "time: {end: 0.1}\n";

static void test_overrides(void **state) {
  (void)state;
  char *set[] = {"time.end=0.5", "grid.cells=[64,64,8]", "initial.u=cos(pi*y)",
                 "boundary.xlo.type=neumann", "decomposition.partition=slabs",
                 "params.kappa=2", "grid.periodic=[false, true, false]", "backend=cuda"};
  int n = (int)(sizeof set / sizeof *set);
  tsr_case *plain = load_ok("base.yaml", base, 0, NULL);
  tsr_case *c = load_ok("base.yaml", base, n, set);
  assert_true(c->time.end == 0.5);
  assert_int_equal(c->dim, 3);
  assert_int_equal(c->cells[0], 64);
  assert_int_equal(c->cells[2], 8);
  assert_string_equal(c->initial[0].text, "cos(pi*y)");
  assert_ptr_equal(c->initial[0].loc.file, c->overrides[2]);
  assert_int_equal(c->initial[0].loc.line, 0);
  assert_int_equal(c->initial[0].loc.col, 11); /* column of the value in the override */
  char where[128];
  assert_string_equal(tsr_case_loc_str(&c->initial[0].loc, where, sizeof where),
                      "--set initial.u=cos(pi*y)");
  assert_int_equal(c->bc[0].type, TSR_BC_NEUMANN); /* boundary: and xlo: created */
  assert_string_equal(c->bc[0].value[0].text, "0");
  assert_int_equal(c->bc[2].type, TSR_BC_PERIODIC);
  assert_int_equal(c->decomp.partition, TSR_PART_SLABS);
  assert_true(tsr_case_param(c, "kappa") == 2.0);
  assert_ptr_equal(c->param_loc[0].file, c->overrides[5]);
  assert_int_equal(c->backend, TSR_BACKEND_CUDA); /* the run decides whether it can */
  assert_int_equal(plain->backend, TSR_BACKEND_AUTO);
  assert_int_equal(c->noverride, n);
  assert_string_equal(c->overrides[1], "grid.cells=[64,64,8]");
  assert_true(c->hash != plain->hash);
  tsr_case_destroy(&c);

  /* the same overrides give the same hash; their order matters */
  c = load_ok("base.yaml", base, n, set);
  tsr_case *d = load_ok("base.yaml", base, 2, set);
  char *swapped[] = {set[1], set[0]};
  tsr_case *e = load_ok("base.yaml", base, 2, swapped);
  assert_true(d->hash != e->hash && d->hash != c->hash && d->hash != plain->hash);
  tsr_case_destroy(&c);
  tsr_case_destroy(&d);
  tsr_case_destroy(&e);
  tsr_case_destroy(&plain);

  /* a whole case from overrides alone */
  char *all[] = {"model=heat", "grid.cells=[8,8]", "initial.u=0", "time.steps=3", "name=x"};
  c = load_ok("empty.yaml", "", 5, all);
  assert_int_equal(c->time.steps, 3);
  assert_string_equal(c->output.dir, "out/x");
  tsr_case_destroy(&c);
}

static void test_load_file(void **state) {
  (void)state;
  char path[] = "/tmp/tsr_case_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, base, sizeof base - 1), (ssize_t)(sizeof base - 1));
  close(fd);
  tsr_case *c = NULL;
  assert_int_equal(tsr_case_load(path, 0, NULL, &c), TSR_OK);
  assert_string_equal(c->path, path);
  assert_string_equal(c->name, strrchr(path, '/') + 1);
  assert_string_equal(c->text, base);
  tsr_case_destroy(&c);
  unlink(path);

  assert_int_equal(tsr_case_load(path, 0, NULL, &c), TSR_ERR_INPUT);
  assert_null(c);
  assert_non_null(strstr(tsr_err_message(), "cannot read case file '/tmp/tsr_case_"));
  assert_non_null(strstr(tsr_err_message(), "check the path"));
  assert_int_equal(tsr_case_load("/tmp", 0, NULL, &c), TSR_ERR_INPUT);
  assert_non_null(strstr(tsr_err_message(), "cannot read case file '/tmp': Is a directory"));
  /* a device without end (or a huge file) is refused at the cap, not read until memory runs out */
  assert_int_equal(tsr_case_load("/dev/zero", 0, NULL, &c), TSR_ERR_INPUT);
  assert_null(c);
  assert_non_null(strstr(tsr_err_message(), "case file '/dev/zero' is larger than 64 MiB"));
}

/* the cap holds while reading: max bytes read whole, one more says there are more */
static void test_read_max(void **state) {
  (void)state;
  const size_t sizes[] = {0, 5, 6, 4095, 4096, 5000, 5001, 9000};
  const size_t max[] = {5, 5000};
  for (size_t m = 0; m < 2; ++m)
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; ++k) {
      FILE *fp = tmpfile();
      assert_non_null(fp);
      for (size_t i = 0; i < sizes[k]; ++i) fputc('a' + (int)(i % 26), fp);
      rewind(fp);
      size_t len = 0;
      char *s = tsr_text_read_max(fp, max[m], &len);
      fclose(fp);
      assert_non_null(s);
      size_t want = sizes[k] <= max[m] ? sizes[k] : max[m] + 1;
      assert_int_equal(len, want);
      assert_int_equal(strlen(s), want);
      if (want) assert_int_equal(s[want - 1], 'a' + (int)((want - 1) % 26));
      free(s);
    }
}

/* One bad input: the case text (lines named in the comments), up to three overrides, and up
 * to three substrings the message must contain. */
typedef struct {
  const char *yaml;
  const char *set[3];
  const char *want[3];
} bad_case;

#define MODEL "model: heat\n"
#define GRID "grid: {cells: [16, 16]}\n"
#define INIT "initial: {u: sin(pi*x)}\n"
#define TIME "time: {end: 0.1}\n"

static const bad_case bad[] = {
    /* YAML syntax and structure */
    {MODEL "grid: {cells: [16, 16}\n", {0}, {"c.yaml:2:", "YAML syntax error: "}},
    {MODEL "model: wave\n" GRID INIT TIME, {0}, {"c.yaml:2:1: duplicate key 'model'"}},
    {MODEL "grid: &g {cells: [16, 16]}\n" INIT TIME, {0}, {"c.yaml:2:7: YAML anchors"}},
    {"- model\n- heat\n", {0}, {"c.yaml:1:1: the case must be a map"}},
    /* unknown keys */
    {"modle: heat\n" GRID INIT TIME, {0},
     {"c.yaml:1:1: unknown key 'modle' (did you mean 'model'?)"}},
    {MODEL "grid: {cells: [16, 16], hj: [2, 2]}\n" INIT TIME, {0},
     {"c.yaml:2:25: unknown key 'grid.hj' (did you mean 'grid.hi'?)"}},
    {MODEL GRID INIT TIME "balancing: {every: 5}\n", {0},
     {"c.yaml:5:1: unknown key 'balancing'; valid keys at the top level: name, model"}},
    {MODEL GRID "initial: {u: 0, w: 1}\n" TIME, {0}, {"c.yaml:3:17: initial: unknown component 'w'"}},
    /* types */
    {MODEL GRID INIT "time: {end: abc}\n", {0}, {"c.yaml:4:13: time.end: expected a number, got 'abc'"}},
    {MODEL "grid: {cells: [16, 1.5]}\n" INIT TIME, {0},
     {"c.yaml:2:20: grid.cells[1]: expected an integer, got '1.5'"}},
    {MODEL "grid: {cells: {x: 16}}\n" INIT TIME, {0}, {"c.yaml:2:15: grid.cells: expected a sequence"}},
    {MODEL GRID INIT "time: {end: \"0.1\"}\n", {0}, {"c.yaml:4:13: time.end: expected a number", "remove the quotes"}},
    {MODEL "grid: {cells: [16, 16], periodic: maybe}\n" INIT TIME, {0},
     {"c.yaml:2:35: grid.periodic: expected true or false, got 'maybe'"}},
    {MODEL GRID INIT "time: [0.1]\n", {0}, {"c.yaml:4:7: time: expected a map"}},
    /* ranges */
    {MODEL "grid: {cells: [0, 16]}\n" INIT TIME, {0}, {"c.yaml:2:16: grid.cells[0]: must be >= 1, got 0"}},
    {MODEL "grid: {cells: [16, 16], lo: [0, 1], hi: [1, 1]}\n" INIT TIME, {0},
     {"c.yaml:2:45: grid.hi[1]: must be > grid.lo[1] = 1, got 1"}},
    {MODEL GRID "params: {kappa: -1}\n" INIT TIME, {0}, {"c.yaml:3:17: params.kappa: must be > 0, got -1"}},
    {MODEL GRID INIT "time: {end: 0.1, cfl: 1.5}\n", {0}, {"c.yaml:4:23: time.cfl: must be in (0, 1], got 1.5"}},
    {MODEL GRID INIT "time: {end: 0.1, dt: 0}\n", {0}, {"c.yaml:4:22: time.dt: must be > 0 (or auto), got 0"}},
    {MODEL GRID INIT "time: {end: -2}\n", {0}, {"c.yaml:4:13: time.end: must be > 0, got -2"}},
    /* missing pieces */
    {GRID INIT TIME, {0}, {"c.yaml:1:1: model: missing; give one of heat, advection_diffusion"}},
    {MODEL INIT TIME, {0}, {"c.yaml:1:1: grid: missing"}},
    {MODEL GRID INIT, {0}, {"c.yaml:1:1: time: missing"}},
    {"model: wave\n" GRID INIT TIME, {0}, {"c.yaml:3:1: initial: missing 'v' (model wave has components u, v)"}},
    {MODEL GRID INIT "time: {end: 0.1, steps: 10}\n", {0},
     {"c.yaml:4:8: time: give either time.end or time.steps, not both"}},
    {MODEL GRID INIT "time: {scheme: rk3}\n", {0}, {"c.yaml:4:1: time: missing time.end or time.steps"}},
    /* model and grid shape */
    {"model: haet\n" GRID INIT TIME, {0}, {"c.yaml:1:8: model: unknown value 'haet' (did you mean 'heat'?)"}},
    /* grids past the code's index types: 2147483647^3 printed negative cells in tessera check
     * and ran out of memory for a wrapped byte count */
    {MODEL "grid: {cells: [2147483647, 16]}\n" INIT TIME, {0},
     {"c.yaml:2:16: grid.cells[0]: at most 536870912 cells per axis", "2147483647"}},
    {MODEL "grid: {cells: [2097152, 2097152, 4096]}\n" INIT TIME, {0},
     {"c.yaml:2:15: grid.cells: 1.801e+16 cells in all, more than tessera counts"}},
    {MODEL "grid: {cells: [4, 4, 4, 4]}\n" INIT TIME, {0},
     {"c.yaml:2:15: grid.cells: expected 2 or 3 positive integers, got 4 values"}},
    {MODEL "grid: {cells: [4, 4], lo: [0, 0, 0]}\n" INIT TIME, {0},
     {"c.yaml:2:27: grid.lo: expected 2 numbers (one per axis of grid.cells), got 3"}},
    {MODEL GRID INIT TIME "time_slices: 2\n", {0}, {"c.yaml:5:1: unknown key 'time_slices'"}},
    /* boundaries */
    {MODEL GRID INIT TIME "boundary: {zlo: {type: neumann}}\n", {0},
     {"c.yaml:5:12: boundary.zlo: z faces exist only in 3D"}},
    {MODEL "grid: {cells: [8, 8], periodic: true}\n" INIT TIME "boundary: {xlo: {type: dirichlet}}\n",
     {0}, {"c.yaml:5:12: boundary.xlo: type dirichlet on axis x", "grid.periodic"}},
    {MODEL GRID INIT TIME "boundary:\n  xlo: {type: neumann}\n  xhi: {type: periodic}\n", {0},
     {"c.yaml:7:3: boundary.xhi: type periodic needs the opposite face xlo periodic too"}},
    {MODEL GRID INIT TIME "boundary: {default: {type: periodic}}\n", {0},
     {"c.yaml:5:12: boundary.default: type periodic cannot be a default"}},
    {MODEL GRID INIT TIME "boundary: {ylo: {type: robin}}\n", {0},
     {"c.yaml:5:24: boundary.ylo.type: unknown value 'robin'"}},
    {MODEL GRID INIT TIME "boundary: {ylo: {type: periodic, value: 1}, yhi: {type: periodic}}\n", {0},
     {"c.yaml:5:34: boundary.ylo.value: a periodic face takes no value"}},
    {"model: wave\n" GRID "initial: {u: 0, v: 0}\n" TIME "boundary: {xlo: {type: dirichlet, value: {u: 1}}}\n",
     {0}, {"c.yaml:5:35: boundary.xlo.value: missing 'v'"}},
    /* params */
    {MODEL GRID "params: {pi: 3}\n" INIT TIME, {0}, {"c.yaml:3:10: params.pi: 'pi' is a constant in expressions"}},
    {MODEL GRID "params: {sin: 3}\n" INIT TIME, {0}, {"c.yaml:3:10: params.sin: 'sin' is a function"}},
    {MODEL GRID "params: {2x: 3}\n" INIT TIME, {0}, {"c.yaml:3:10: params.2x: '2x' is not a valid name"}},
    {MODEL GRID "params: {a: b}\n" INIT TIME, {0}, {"c.yaml:3:13: params.a: expected a number, got 'b'"}},
    /* not in this version */
    {MODEL "method: parareal\n" GRID INIT TIME, {0}, {"c.yaml:2:9: method: parareal is not available in this version"}},
    /* method implicit (io/case_implicit.c) */
#define IMPL MODEL "method: implicit\n" GRID INIT
    {IMPL TIME, {0}, {"c.yaml:5:1: time: missing time.dt; method implicit needs the step"}},
    {IMPL "time: {dt: auto, end: 1}\n", {0}, {"c.yaml:5:12: time.dt: auto takes a fraction"}},
    {IMPL "time: {dt: 0.1, end: 1, cfl: 0.5}\n", {0}, {"c.yaml:5:25: time.cfl: a key of the explicit method"}},
    {IMPL "time: {scheme: rk4, dt: 0.1, end: 1}\n", {0},
     {"c.yaml:5:16: time.scheme: rk4 is an explicit scheme; method implicit takes beuler, cn, bdf2 or ark_imex"}},
    {IMPL "time: {scheme: bdf3, dt: 0.1, end: 1}\n", {0}, {"c.yaml:5:16: time.scheme: unknown value 'bdf3'", "bdf2"}},
    {IMPL "time: {dt: 0.1, end: 1, rtol: 1e-3}\n", {0},
     {"c.yaml:5:25: time.rtol: a tolerance of the adaptive step; add time.adaptive: true"}},
    {IMPL "time: {dt: 0.1, steps: 3, adaptive: true}\n", {0}, {"time.steps: an adaptive run takes as many steps"}},
    {IMPL "time: {dt: 0.1, end: 1, adaptive: true, atol: 2}\n", {0},
     {"time.atol: expected a tolerance in [1e-100, 1), got 2"}},
    /* tolerances no double run resolves: 1e-300 stopped the run with PETSc's "Infinite or
     * not-a-number generated in normr" (internal error, exit 1) */
    {IMPL "time: {dt: 0.1, end: 1, adaptive: true, rtol: 1e-300}\n", {0},
     {"c.yaml:5:47: time.rtol: expected a tolerance in [1e-14, 1), got 1e-300"}},
    {IMPL "time: {dt: 0.1, end: 1, adaptive: true}\n", {"time.atol=1e-300"},
     {"--set time.atol=1e-300: time.atol: expected a tolerance in [1e-100, 1), got 1e-300",
      "overflows"}},
    {IMPL "time: {dt: 0.1, end: 1}\npetsc: {ksp_type: {a: 1}}\n", {0},
     {"c.yaml:6:19: petsc.ksp_type: expected one value (a word or a number) or nothing, got a map"}},
    {IMPL "time: {dt: 0.1, end: 1}\npetsc: [ksp_type]\n", {0}, {"c.yaml:6:8: petsc: expected a map"}},
    {IMPL "time: {dt: 0.1, end: 1}\npetsc: {ksp type: cg}\n", {0}, {"c.yaml:6:9: petsc.ksp type: not a PETSc option name"}},
    {IMPL "time: {dt: 0.1, end: 1}\npetsc: {ksp_type: cg, -ksp_type: gmres}\n", {0}, {"petsc.-ksp_type: given twice"}},
    {MODEL GRID INIT TIME "petsc: {ksp_type: cg}\n", {0},
     {"c.yaml:5:1: petsc: PETSc's options, for method implicit, and this case's method is explicit"}},
    {"model: wave\nmethod: implicit\n" GRID "initial: {u: 0, v: 0}\ntime: {dt: 0.1, end: 1}\n", {0},
     {"c.yaml:1:8: model: wave has no implicit form in this version", "use method: explicit"}},
    {IMPL "precision: single\ntime: {dt: 0.1, end: 1}\n", {0}, {"c.yaml:5:12: precision: single: method implicit solves in double"}},
    {IMPL "backend: cuda\ntime: {dt: 0.1, end: 1}\n", {0},
     {"c.yaml:5:10: backend: cuda: method implicit solves on CPU ranks", "Debian's petsc-dev"}},
    {IMPL "time: {dt: 0.1, end: 1}\nrebalance: {every: 5}\n", {0},
     {"c.yaml:6:1: rebalance: a section of the explicit method; method implicit has no rebalance"}},
    /* the time plan's TS options are time:'s (PETSc ended the run elsewhere than time.end) */
    {IMPL "time: {dt: 0.1, end: 1}\npetsc: {ts_dt: 0.01}\n", {0},
     {"c.yaml:6:9: petsc.ts_dt: tessera sets this from the case: time.dt sets the step"}},
    {IMPL "time: {dt: 0.1, end: 1, adaptive: true}\npetsc: {-ts_adapt_type: none}\n", {0},
     {"petsc.-ts_adapt_type: tessera sets this from the case: time.adaptive: false"}},
    {IMPL "time: {dt: 0.1, end: 1}\n", {"petsc.ts_adapt_type=basic"},
     {"petsc.ts_adapt_type: tessera sets this from the case: time.adaptive: true turns"}},
    {MODEL "method: pinn\n" GRID INIT TIME "pinn: {adam: {iterations: 0}}\n", {0},
     {"pinn.adam.iterations: must be an integer from 1"}},
    /* a loss of nothing trained nothing, with exit 0 */
    {MODEL "method: pinn\n" GRID INIT TIME "pinn: {weights: {pde: 0, boundary: 0, initial: 0}}\n",
     {0}, {"c.yaml:6:17: pinn.weights: pde, boundary and initial are all 0"}},
    {"model: poisson\nmethod: pinn\n" GRID "pinn: {weights: {pde: 0, boundary: 0}}\n", {0},
     {"pinn.weights: pde and boundary (a steady model has no initial term) are both 0"}},
    /* method explicit checks a pinn: section and leaves it unused (one file, both methods) */
    {MODEL "pinn: {adam: {iterations: 0}}\n" GRID INIT TIME, {0},
     {"pinn.adam.iterations: must be an integer from 1"}},
    {MODEL "backend: cdua\n" GRID INIT TIME, {0}, {"c.yaml:2:10: backend:", "did you mean 'cuda'"}},
    /* parareal (io/case_parareal.c) */
    {MODEL "method: implicit\n" GRID INIT "time: {dt: 0.01, end: 0.1}\n"
     "decomposition: {time_slices: 4}\n", {0},
     {"c.yaml:6:30: decomposition.time_slices: parareal runs the explicit method's steps"}},
    {MODEL GRID INIT TIME "parareal: {tol: 1e-3}\n", {0},
     {"c.yaml:5:1: parareal: used only with method explicit and decomposition.time_slices > 1"}},
    {MODEL GRID INIT TIME "decomposition: {time_slices: 4}\nparareal: {coarsen: 3}\n", {0},
     {"c.yaml:6:21: parareal.coarsen: 3 does not divide grid.cells[0] = 16"}},
    {MODEL GRID INIT TIME "decomposition: {time_slices: 4}\nparareal: {coarse_cfl: 1.5}\n", {0},
     {"c.yaml:6:24: parareal.coarse_cfl: must be in (0, 1], got 1.5"}},
    {MODEL GRID INIT TIME "decomposition: {time_slices: 4}\n"
     "parareal: {coarse_cfl: 0.5, coarse_dt: 1e-4}\n", {0},
     {"parareal.coarse_dt: give coarse_dt or coarse_cfl, not both"}},
    {MODEL GRID INIT TIME "decomposition: {time_slices: 4}\nparareal: {max_iterations: 5}\n", {0},
     {"c.yaml:6:28: parareal.max_iterations: must be in 1..4, got 5"}},
    {MODEL GRID INIT TIME "decomposition: {time_slices: 4}\nparareal: {slices_per_rank: 3}\n",
     {0}, {"c.yaml:6:29: parareal.slices_per_rank: 3 does not divide decomposition.time_slices"}},
    {MODEL GRID INIT TIME "decomposition: {time_slices: 4}\nparareal: {tol: 0}\n", {0},
     {"c.yaml:6:17: parareal.tol: must be > 0, got 0"}},
    {MODEL GRID INIT TIME "decomposition: {time_slices: 4}\nparareal: {coarse_dt: 1e-3, tl: 1}\n",
     {0}, {"unknown key 'parareal.tl' (did you mean 'parareal.tol'?)"}},
    {MODEL GRID INIT TIME "decomposition: {time_slices: 4}\n"
     "output: {checkpoint_every: {time: 0.01}}\n", {0},
     {"c.yaml:6:10: output.checkpoint_every: a parareal run", "every N iterations"}},
    {MODEL GRID INIT TIME "decomposition: {time_slices: 4}\nrebalance: {every: 10}\n", {0},
     {"c.yaml:6:1: rebalance: not with parareal"}},
    {MODEL GRID INIT TIME "decomposition: {partition: rcb, ranks: [2, 2]}\n", {0},
     {"c.yaml:5:33: decomposition.ranks: gives a grid partition, but decomposition.partition says rcb"}},
    /* weights whose sum overflows: every rank's share was NaN, the boxes garbage */
    {MODEL GRID INIT TIME "decomposition: {weights: [1e308, 1e308]}\n", {0},
     {"c.yaml:5:26: decomposition.weights: they add up to inf"}},
    {MODEL GRID INIT TIME "decomposition: {ranks: [2, 2], weights: [1, 1, 1, 1]}\n", {0},
     {"c.yaml:5:32: decomposition.weights: only used with partition rcb or slabs"}},
    {MODEL GRID INIT TIME "output: {progress: bars}\n", {0},
     {"c.yaml:5:20: output.progress: unknown value 'bars' (did you mean 'bar'?)"}},
    {"name: my case\n" MODEL GRID INIT TIME, {0}, {"c.yaml:1:7: name: 'my case' has characters"}},
    /* comm */
    {MODEL GRID INIT TIME "comm: {timeout: 0}\n", {0},
     {"c.yaml:5:17: comm.timeout: expected seconds in [0.1, 1e7], got 0"}},
    {MODEL GRID INIT TIME "comm: {timout: 5}\n", {0},
     {"c.yaml:5:8: unknown key 'comm.timout' (did you mean 'comm.timeout'?)"}},
    {MODEL GRID INIT TIME, {"comm.timeout=soon"}, {"--set comm.timeout=soon: comm.timeout: expected a number"}},
    /* gpu */
    {MODEL GRID INIT TIME "gpu: {graphs: maybe}\n", {0},
     {"c.yaml:5:15: gpu.graphs: expected auto, on or off, got 'maybe'"}},
    {MODEL GRID INIT TIME "gpu: {graph: on}\n", {0},
     {"c.yaml:5:7: unknown key 'gpu.graph' (did you mean 'gpu.graphs'?)"}},
    {MODEL GRID INIT TIME, {"gpu.graphs=[on]"}, {"--set gpu.graphs=[on]: gpu.graphs: expected auto, on or off"}},
    /* overrides */
    {MODEL GRID INIT TIME, {"time.end"}, {"--set time.end: expected KEY=VALUE"}},
    {MODEL GRID INIT TIME, {"=3"}, {"--set =3: empty key before '='"}},
    {MODEL GRID INIT TIME, {"time..end=3"}, {"--set time..end=3: time..end: empty part"}},
    {MODEL GRID INIT TIME, {"time.end.x=1"}, {"--set time.end.x=1: cannot set time.end.x: time.end is a single value"}},
    {MODEL GRID INIT TIME, {"time.end=abc"}, {"--set time.end=abc: time.end: expected a number, got 'abc'"}},
    {MODEL GRID INIT TIME, {"grid.cells=[64, x]"}, {"--set grid.cells=[64, x]: grid.cells[1]: expected an integer, got 'x'"}},
    {MODEL GRID INIT TIME, {"modle=wave"}, {"--set modle=wave: unknown key 'modle' (did you mean 'model'?)"}},
    /* found by tests/fuzz/fuzz_case.c: a checkpoint records each --set as one comment line, so
     * a line break in one made the record unreadable (or a different case) */
    {MODEL GRID INIT TIME, {"initial.u=sin(x)\n*2"},
     {"--set initial.u=sin(x)\n*2: a line break in the option; give KEY=VALUE on one line"}},
    {MODEL GRID INIT TIME, {"time.end=1\r"}, {": a line break in the option"}},
    /* several problems at once, in file order, overrides last */
    {"model: heat\ngrid: {cells: [0, 16]}\n" INIT "time: {end: 0.1, cfl: 2}\n", {"time.steps=0.5"},
     {"c.yaml:2:16: grid.cells[0]: must be >= 1, got 0\nc.yaml:4:8: time: give either time.end or "
      "time.steps, not both\n",
      "\nc.yaml:4:23: time.cfl: must be in (0, 1], got 2\n",
      "--set time.steps=0.5: time.steps: expected an integer, got '0.5'"}},
};

/* comm.timeout: 300 s unless given; a --set of it does not change the restart hash (a relaunch
 * may wait longer or shorter) */
static void test_comm_timeout(void **state) {
  (void)state;
  static const char text[] = MODEL GRID INIT TIME;
  tsr_case *c = load_ok("c.yaml", text, 0, NULL);
  assert_true(c->comm.timeout == 300.0);
  uint64_t h = tsr_case_restart_hash(c);
  tsr_case_destroy(&c);
  char *set[] = {"comm.timeout=2.5"};
  c = load_ok("c.yaml", text, 1, set);
  assert_true(c->comm.timeout == 2.5);
  assert_true(tsr_case_restart_hash(c) == h);
  tsr_case_destroy(&c);
  c = load_ok("c.yaml", MODEL GRID INIT TIME "comm: {timeout: 7}\n", 0, NULL);
  assert_true(c->comm.timeout == 7.0);
  tsr_case_destroy(&c);
}

/* gpu.graphs: auto unless given; on and off in any boolean spelling; a --set of it does not
 * change the restart hash (graphs give the same bits) */
static void test_gpu_graphs(void **state) {
  (void)state;
  static const char text[] = MODEL GRID INIT TIME;
  tsr_case *c = load_ok("c.yaml", text, 0, NULL);
  assert_int_equal(c->gpu.graphs, TSR_GRAPHS_AUTO);
  uint64_t h = tsr_case_restart_hash(c);
  tsr_case_destroy(&c);
  static const struct {
    const char *set;
    tsr_graphs_mode want;
  } kinds[] = {{"gpu.graphs=off", TSR_GRAPHS_OFF}, {"gpu.graphs=false", TSR_GRAPHS_OFF},
               {"gpu.graphs=On", TSR_GRAPHS_ON},   {"gpu.graphs=yes", TSR_GRAPHS_ON},
               {"gpu.graphs=auto", TSR_GRAPHS_AUTO}};
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; ++i) {
    char *set[] = {(char *)kinds[i].set};
    c = load_ok("c.yaml", text, 1, set);
    assert_int_equal(c->gpu.graphs, kinds[i].want);
    assert_true(tsr_case_restart_hash(c) == h);
    tsr_case_destroy(&c);
  }
  c = load_ok("c.yaml", MODEL GRID INIT TIME "gpu: {graphs: off}\n", 0, NULL);
  assert_int_equal(c->gpu.graphs, TSR_GRAPHS_OFF);
  tsr_case_destroy(&c);
}

/* Found by tests/fuzz/fuzz_case.c: a case file whose own last line is a comment that reads as a
 * recorded override ("# --set time.end=5") came back from its checkpoint's record with that
 * override applied; the record now ends such a text with a bare "#" line. */
static void test_record_comment(void **state) {
  (void)state;
  static const char *const texts[] = {MODEL GRID INIT TIME "# --set time.end=5\n",
                                      MODEL GRID INIT TIME "# --set time.end=5\n\n",
                                      MODEL GRID INIT TIME "# --set time.end=5"};
  char *set[] = {"time.end=0.2"};
  for (size_t i = 0; i < sizeof texts / sizeof *texts; ++i) {
    for (int nset = 0; nset <= 1; ++nset) {
      tsr_case *c = load_ok("c.yaml", texts[i], nset, set);
      char *rec = tsr_case_record(c);
      assert_non_null(rec);
      tsr_case *back = NULL;
      assert_int_equal(tsr_case_load_record("ckpt.h5", rec, &back), TSR_OK);
      assert_true(back->time.end == (nset ? 0.2 : 0.1));
      assert_int_equal(back->noverride, nset);
      tsr_case_destroy(&back);
      free(rec);
      tsr_case_destroy(&c);
    }
  }
}

static void test_bad_inputs(void **state) {
  (void)state;
  int nbad = (int)(sizeof bad / sizeof *bad);
  for (int i = 0; i < nbad; ++i) {
    int n = 0;
    while (n < 3 && bad[i].set[n]) ++n;
    tsr_case *c = (tsr_case *)&c; /* must come back NULL */
    tsr_err err = tsr_case_load_string("c.yaml", bad[i].yaml, n, (char *const *)bad[i].set, &c);
    const char *msg = tsr_err_message();
    if (getenv("TSR_TEST_VERBOSE")) printf("#%d\n%s\n", i, msg);
    int ok = err == TSR_ERR_INPUT && c == NULL;
    for (int k = 0; k < 3 && bad[i].want[k]; ++k) ok = ok && strstr(msg, bad[i].want[k]);
    if (!ok)
      fail_msg("bad input #%d (code %d)\n--- case:\n%s--- message:\n%s\n--- wanted:\n%s", i,
               (int)err, bad[i].yaml, msg, bad[i].want[0]);
  }
  assert_true(nbad >= 25);
}

/* rebalance: defaults (every 100, threshold 0.05, window = every, enabled not given), given
 * values, and --set of them or of debug.* leaves the restart hash alone (they never change the
 * bits of a result) */
static void test_rebalance_section(void **state) {
  (void)state;
  static const char text[] = MODEL GRID INIT TIME;
  tsr_case *c = load_ok("c.yaml", text, 0, NULL);
  assert_int_equal(c->rebalance.every, 100);
  assert_true(c->rebalance.threshold == 0.05);
  assert_int_equal(c->rebalance.window, 100);
  assert_int_equal(c->rebalance.enabled, -1);
  assert_true(c->rebalance.reserve == 0.5);
  assert_int_equal(c->rebalance.clock, TSR_CLOCK_WALL);
  assert_int_equal(c->debug.slowdown, 0);
  uint64_t h = tsr_case_restart_hash(c);
  tsr_case_destroy(&c);
  c = load_ok("c.yaml", MODEL GRID INIT TIME "rebalance: {every: 20, threshold: 0.1, "
              "enabled: off, reserve: 0, clock: cpu}\n", 0, NULL);
  assert_true(c->rebalance.reserve == 0.0);
  assert_int_equal(c->rebalance.clock, TSR_CLOCK_CPU);
  assert_int_equal(c->rebalance.every, 20);
  assert_int_equal(c->rebalance.window, 20);
  assert_true(c->rebalance.threshold == 0.1);
  assert_int_equal(c->rebalance.enabled, 0);
  tsr_case_destroy(&c);
  char *set[] = {"rebalance.every=50", "rebalance.window=10", "rebalance.enabled=yes",
                 "rebalance.clock=cpu", "debug.slowdown={rank: 3, factor: 2.5, steps: [10, 40]}"};
  c = load_ok("c.yaml", text, 5, set);
  assert_int_equal(c->rebalance.every, 50);
  assert_int_equal(c->rebalance.window, 10);
  assert_int_equal(c->rebalance.enabled, 1);
  assert_int_equal(c->rebalance.clock, TSR_CLOCK_CPU);
  assert_int_equal(c->debug.slowdown, 1);
  assert_int_equal(c->debug.slowdown_rank, 3);
  assert_true(c->debug.slowdown_factor == 2.5);
  assert_int_equal(c->debug.slowdown_steps[0], 10);
  assert_int_equal(c->debug.slowdown_steps[1], 40);
  assert_int_equal(c->debug.slowdown_loc.line, 0); /* an override */
  assert_true(tsr_case_restart_hash(c) == h);
  tsr_case_destroy(&c);
  c = load_ok("c.yaml", MODEL GRID INIT TIME "debug:\n  slowdown: {rank: 1, factor: 2, "
              "steps: [5, 5]}\n", 0, NULL);
  assert_int_equal(c->debug.slowdown_rank, 1);
  assert_int_equal(c->debug.slowdown_loc.line, 6);
  assert_int_equal(c->debug.slowdown_loc.col, 20);
  tsr_case_destroy(&c);
}

static const bad_case bad_rebalance[] = {
    {MODEL GRID INIT TIME "rebalance: {evry: 5}\n", {0},
     {"c.yaml:5:13: unknown key 'rebalance.evry' (did you mean 'rebalance.every'?)"}},
    {MODEL GRID INIT TIME "rebalance: {every: 0}\n", {0},
     {"c.yaml:5:20: rebalance.every: must be >= 1 steps, got 0"}},
    {MODEL GRID INIT TIME "rebalance: {threshold: -0.1}\n", {0},
     {"c.yaml:5:24: rebalance.threshold: expected an imbalance in [0, 100]"}},
    {MODEL GRID INIT TIME "rebalance: {every: 10, window: 20}\n", {0},
     {"c.yaml:5:32: rebalance.window: must be from 1 to rebalance.every (10) steps, got 20"}},
    {MODEL GRID INIT TIME "rebalance: {enabled: sometimes}\n", {0},
     {"c.yaml:5:22: rebalance.enabled: expected true or false, got 'sometimes'"}},
    {MODEL GRID INIT TIME "rebalance: 5\n", {0}, {"c.yaml:5:12: rebalance: expected a map"}},
    {MODEL GRID INIT TIME "rebalance: {reserve: -1}\n", {0},
     {"c.yaml:5:22: rebalance.reserve: expected a fraction in [0, 100]"}},
    {MODEL GRID INIT TIME "rebalance: {clock: gpu}\n", {0},
     {"c.yaml:5:20: rebalance.clock: unknown value 'gpu'", "expected one of wall, cpu"}},
    {MODEL GRID INIT TIME, {"rebalance.clock=cpus"},
     {"--set rebalance.clock=cpus: rebalance.clock: unknown value 'cpus' (did you mean 'cpu'?)"}},
    {MODEL GRID INIT TIME, {"rebalance.threshold=high"},
     {"--set rebalance.threshold=high: rebalance.threshold: expected a number, got 'high'"}},
    {MODEL GRID INIT TIME "debug: {slowdwn: {rank: 0}}\n", {0},
     {"c.yaml:5:9: unknown key 'debug.slowdwn' (did you mean 'debug.slowdown'?)"}},
    {MODEL GRID INIT TIME "debug: {slowdown: {rank: 1, factor: 2}}\n", {0},
     {"c.yaml:5:9: debug.slowdown: missing 'steps'"}},
    {MODEL GRID INIT TIME "debug: {slowdown: {rank: -1, factor: 2, steps: [1, 2]}}\n", {0},
     {"c.yaml:5:26: debug.slowdown.rank: must be a rank (>= 0), got -1"}},
    {MODEL GRID INIT TIME "debug: {slowdown: {rank: 0, factor: 0.5, steps: [1, 2]}}\n", {0},
     {"c.yaml:5:37: debug.slowdown.factor: expected a factor in [1, 1000]"}},
    {MODEL GRID INIT TIME "debug: {slowdown: {rank: 0, factor: 2, steps: [9, 2]}}\n", {0},
     {"c.yaml:5:47: debug.slowdown.steps: expected [a, b] with 1 <= a <= b, got [9, 2]"}},
    {MODEL GRID INIT TIME "debug: {slowdown: {rank: 0, factor: 2, steps: 7}}\n", {0},
     {"c.yaml:5:47: debug.slowdown.steps: expected [a, b]"}},
    {MODEL GRID INIT TIME "debug: {slowdown: {rank: 0, factor: 2, stesp: [1, 2]}}\n", {0},
     {"unknown key 'debug.slowdown.stesp' (did you mean 'debug.slowdown.steps'?)",
      "debug.slowdown: missing 'steps'"}},
    {MODEL GRID INIT TIME, {"debug.slowdown.rank=x"},
     {"--set debug.slowdown.rank=x: debug.slowdown: missing 'factor'",
      "debug.slowdown.rank: expected an integer, got 'x'"}},
};

static void test_bad_rebalance(void **state) {
  (void)state;
  int nbad = (int)(sizeof bad_rebalance / sizeof *bad_rebalance);
  for (int i = 0; i < nbad; ++i) {
    const bad_case *b = &bad_rebalance[i];
    int n = 0;
    while (n < 3 && b->set[n]) ++n;
    tsr_case *c = (tsr_case *)&c; /* must come back NULL */
    tsr_err err = tsr_case_load_string("c.yaml", b->yaml, n, (char *const *)b->set, &c);
    const char *msg = tsr_err_message();
    int ok = err == TSR_ERR_INPUT && c == NULL;
    for (int k = 0; k < 3 && b->want[k]; ++k) ok = ok && strstr(msg, b->want[k]);
    if (!ok)
      fail_msg("bad rebalance input #%d (code %d)\n--- case:\n%s--- message:\n%s\n--- "
               "wanted:\n%s", i, (int)err, b->yaml, msg, b->want[0]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_full_case), cmocka_unit_test(test_3d_case),
      cmocka_unit_test(test_overrides), cmocka_unit_test(test_load_file),
      cmocka_unit_test(test_read_max),
      cmocka_unit_test(test_bad_inputs), cmocka_unit_test(test_comm_timeout),
      cmocka_unit_test(test_gpu_graphs), cmocka_unit_test(test_record_comment),
      cmocka_unit_test(test_rebalance_section), cmocka_unit_test(test_bad_rebalance),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
