/* Case files.
 *
 * Schema (README copies this block). Keys not listed are refused as unknown, with a
 * suggestion when one is close. Numbers must be unquoted; booleans are true/false, yes/no,
 * on/off in any case; expressions are strings or numbers (see io/expr.h for their syntax).
 *
 *   name: STRING             optional; [A-Za-z0-9_.-] only; default: the file's stem
 *                            (cases/heat2d.yaml -> heat2d)
 *   model: NAME              required; heat | advection_diffusion | wave | gray_scott |
 *                            allen_cahn | ignition (kernels/models.c)
 *   method: explicit         optional; explicit | implicit | pinn (parareal: not in this
 *                            version). pinn: the pinn: section below, grid.cells may have 1
 *                            value, time: takes only end (none for a steady model), and
 *                            precision defaults to single. implicit: time: and the petsc:
 *                            section of io/case_implicit.c
 *   backend: auto | host | cuda  optional, default auto (cuda when GPUs are visible)
 *   precision: double | single   optional, default double. single stores fields, halos and
 *                            output files in 32 bits (half the memory and traffic); every cell's
 *                            update is still computed in double and rounded once when stored
 *   grid:                    required
 *     cells: [nx, ny(, nz)]  required; 2 or 3 integers from 1 to 2^29, at most 2^53 cells in
 *                            all; their count is the dimension
 *     lo: [..]               optional, default all 0; one number per axis
 *     hi: [..]               optional, default all 1; hi > lo on every axis
 *     periodic: BOOL | [..]  optional, default false; one boolean for all axes or one per axis
 *   params: {NAME: NUMBER}   optional; the model's params (defaults and ranges in
 *                            kernels/models.c) and any others the expressions use. A name is
 *                            [A-Za-z_][A-Za-z0-9_]*, not x y z t pi nor an expression function
 *   initial: {COMP: EXPR}    required; every component of the model (heat: u; wave: u, v)
 *   source: {COMP: EXPR}     optional; any subset of the components
 *   exact: {COMP: EXPR}      optional; any subset of the components
 *   boundary:                optional; faces without an entry take `default`, else dirichlet 0
 *     default | xlo | xhi | ylo | yhi | zlo | zhi:   (z faces in 3D only)
 *       type: dirichlet | neumann | periodic         required
 *       value: EXPR | {COMP: EXPR}  dirichlet: u on the face; neumann: du/dn, outward normal.
 *                                   One expression for all components or one per component;
 *                                   default 0; not allowed with periodic.
 *                            An axis is periodic when grid.periodic says so or when a face of
 *                            it says periodic (then the opposite face must not say otherwise).
 *                            `default` never makes an axis periodic.
 *   time:                    required
 *     scheme: ssp_rk3        euler (forward_euler) | ssp_rk2 (rk2) | ssp_rk3 (rk3) | rk4
 *     dt: auto               a number > 0, or auto: cfl times the model's stability limit
 *     cfl: 0.9               in (0, 1]
 *     end: T | steps: N      exactly one: a time > 0 or an integer >= 1
 *     fuse: 1                steps per halo exchange, 1..16 or auto (the fastest of 1, 2, 4,
 *                            8 on the run's first steps): ghosts fuse x stages x the stencil
 *                            radius deep, exchanged once per fuse steps (method explicit;
 *                            checked and unused by method pinn)
 *   decomposition:           optional
 *     partition: rcb         rcb | slabs | grid
 *     ranks: [px, py(, pz)]  ranks per axis; implies partition grid
 *     weights: [w0, w1, ..]  relative speed of each rank (> 0); rcb and slabs only
 *     time_slices: 1         > 1: time slices; parareal with method explicit (its keys in
 *                            io/case_parareal.c), time slabs with method pinn
 *   output:                  optional
 *     dir: out/NAME          where results go
 *     monitor_every: N       steps between monitor lines; default: about 20 per run
 *     progress: auto         auto | bar | lines | none
 *     checkpoint_every: none N | {steps: N} | {time: T}: checkpoints DIR/checkpoint_<step>.h5
 *                            every N steps (N >= 1) or after the step that first reaches each
 *                            multiple of simulated time T (> 0); never at the last step
 *     keep: 3                checkpoints kept (the newest); integer >= 1
 *     io: auto               auto | serial | parts: how ranks write HDF5 files. auto:
 *                            collectively (MPI-IO) where HDF5 is parallel; where it is serial,
 *                            snapshots in turn and checkpoints of several ranks in parts.
 *                            serial: ranks write in turn into one file even where HDF5 is
 *                            parallel. parts: checkpoints as one file per rank, written at the
 *                            same time, beside checkpoint_<step>.h5, whose virtual datasets
 *                            map them (snapshots as auto)
 *     snapshot_every: none   as checkpoint_every: DIR/snapshot_<step>.h5 for viewing, listed
 *                            in DIR/snapshots.xmf (io/snapshot.h); also the initial state
 *     snapshot_precision: double   double | single (float32 datasets)
 *   comm:                    optional
 *     timeout: 300           seconds (> 0) a rank may go without progress before the watchdog
 *                            aborts the job, naming the rank that stopped
 *   gpu:                     optional
 *     graphs: auto           auto | on | off (on, off: any boolean): replay each step as a
 *                            CUDA graph (CUDA backend; auto: on); the same results either way
 *   rebalance:               optional; cells move between ranks from measured compute times
 *     every: 100             steps between decisions; integer >= 1
 *     threshold: 0.05        imbalance (max/mean - 1 of the ranks' compute times) above which
 *                            a rebalance is considered; a number in [0, 100]
 *     window: EVERY          steps the figures are measured over; 1 <= window <= every
 *     enabled: BOOL          default: true on several ranks, false on one
 *     reserve: 0.5           GPUs: every field keeps room for a box this fraction larger than
 *                            the rank's first, so that a migration growing it allocates
 *                            nothing; capped by the free memory; a number in [0, 100]
 *     clock: wall            wall | cpu: CPU ranks time their compute by the wall clock, or by
 *                            their thread's CPU time (CLOCK_THREAD_CPUTIME_ID), which leaves
 *                            out the time the OS gave other processes: for more ranks than
 *                            cores or shared cores; GPUs time with CUDA events either way
 *   debug:                   optional; for tests and benchmarks only
 *     slowdown:              emulates a slower rank: its compute is repeated
 *       rank: R              required; an integer >= 0 below the rank count
 *       factor: F            required; its compute takes F times as long, F in [1, 1000]
 *       steps: [a, b]        required; from step a to step b (included), 1 <= a <= b
 *   pinn:                    method: pinn (io/case_pinn.c has the keys); another method
 *                            checks the section and leaves it unused
 *   petsc: {OPTION: VALUE}   method: implicit only (io/case_implicit.c)
 *   parareal:                method explicit with decomposition.time_slices > 1 only
 *                            (io/case_parareal.c)
 *
 * --set KEY=VALUE overrides (applied in order before validation): KEY is a dotted path
 * (time.end, boundary.xlo.type), VALUE a YAML flow value ([64, 64], 0.5, sin(pi*x)) or else
 * plain text; missing maps on the path are created. */
#define _POSIX_C_SOURCE 200809L /* strdup, strcasecmp, stat */
#include "io/case.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/case_validate.h"
#include "io/text.h"

const char *const tsr_case_face_names[TSR_NFACE] = {"xlo", "xhi", "ylo", "yhi", "zlo", "zhi"};

int tsr_case_face(const char *name) {
  for (int f = 0; f < TSR_NFACE; ++f)
    if (strcmp(name, tsr_case_face_names[f]) == 0) return f;
  return -1;
}

const char *tsr_case_loc_str(const tsr_loc *loc, char *buf, size_t size) {
  if (loc->file && loc->line > 0)
    snprintf(buf, size, "%s:%d:%d", loc->file, loc->line, loc->col);
  else if (loc->file)
    snprintf(buf, size, "--set %s", loc->file);
  else
    snprintf(buf, size, "(default)");
  return buf;
}

double tsr_case_param(const tsr_case *c, const char *name) {
  for (int i = 0; i < c->nparam; ++i)
    if (strcmp(c->param_name[i], name) == 0) return c->param_value[i];
  return 0.0;
}

void tsr_case_destroy(tsr_case **pc) {
  if (!pc || !*pc) return;
  tsr_case *c = *pc;
  for (int i = 0; i < c->noverride; ++i) free(c->overrides[i]);
  free(c->overrides);
  for (int i = 0; i < c->nparam; ++i) free(c->param_name[i]);
  for (int k = 0; k < TSR_MAX_COMP; ++k) {
    tsr_case_expr_clear(&c->initial[k]);
    tsr_case_expr_clear(&c->source[k]);
    tsr_case_expr_clear(&c->exact[k]);
    for (int f = 0; f < TSR_NFACE; ++f) tsr_case_expr_clear(&c->bc[f].value[k]);
  }
  for (int i = 0; i < c->implicit.nopt; ++i) {
    free(c->implicit.opt_name[i]);
    free(c->implicit.opt_value[i]);
  }
  free(c->implicit.opt_name);
  free(c->implicit.opt_value);
  free(c->implicit.opt_loc);
  free(c->decomp.weights);
  free(c->output.dir);
  free(c->path);
  free(c->name);
  free(c->text);
  free(c);
  *pc = NULL;
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

/* ---- overrides ---------------------------------------------------------------------- */

/* The value of an override: a YAML flow value when it parses as one, else the text itself. */
static tsr_err override_value(const char *ovr, const char *text, tsr_yaml_node **out) {
  tsr_err err = tsr_yaml_parse(ovr, text, out);
  if (err == TSR_ERR_MEMORY) return err;
  if (err) {
    tsr_err_clear();
    *out = NULL;
  }
  if (!*out || err) {
    tsr_yaml_free(*out);
    *out = tsr_yaml_scalar(ovr, 0, 1, text);
    TSR_CHECK(*out, TSR_ERR_MEMORY, "out of memory applying --set %s", ovr);
  }
  tsr_yaml_relocate(*out, ovr, (int)(text - ovr));
  return TSR_OK;
}

static tsr_err apply_override(tsr_vctx *v, tsr_yaml_node *root, const char *ovr) {
  const char *eq = strchr(ovr, '=');
  if (ovr[strcspn(ovr, "\r\n")]) { /* a checkpoint records it as one comment line */
    tsr_vproblem(v, ovr, 0, 0, "a line break in the option; give KEY=VALUE on one line");
    return TSR_OK;
  }
  if (!eq) {
    tsr_vproblem(v, ovr, 0, 0, "expected KEY=VALUE, e.g. --set time.end=0.5");
    return TSR_OK;
  }
  size_t klen = (size_t)(eq - ovr);
  char key[256];
  if (klen == 0 || klen >= sizeof key) {
    tsr_vproblem(v, ovr, 0, 0, "%s key before '='; expected KEY=VALUE, e.g. --set time.end=0.5",
                 klen ? "too long a" : "empty");
    return TSR_OK;
  }
  memcpy(key, ovr, klen);
  key[klen] = '\0';
  if (key[0] == '.' || key[klen - 1] == '.' || strstr(key, "..")) {
    tsr_vproblem(v, ovr, 0, 0, "%s: empty part in the dotted key", key);
    return TSR_OK;
  }
  tsr_yaml_node *node = root;
  char *seg = key;
  for (char *dot; (dot = strchr(seg, '.')); seg = dot + 1) {
    *dot = '\0';
    tsr_yaml_entry *e = tsr_yaml_find(node, seg);
    if (e && tsr_yaml_is_null(e->value)) { /* "params:" with nothing under it */
      tsr_yaml_free(e->value);
      e->value = NULL;
    }
    if (!e || !e->value) {
      tsr_yaml_node *map = tsr_yaml_map(ovr, 0, 1);
      TSR_CHECK(map, TSR_ERR_MEMORY, "out of memory applying --set %s", ovr);
      if (e)
        e->value = map;
      else
        TSR_CALL(tsr_yaml_add(node, seg, ovr, 0, 1, map));
      node = map;
      continue;
    }
    if (e->value->kind != TSR_YAML_MAP) {
      tsr_vproblem(v, ovr, 0, 0, "cannot set %.*s: %s is a %s, not a map", (int)klen, ovr, key,
                   e->value->kind == TSR_YAML_SEQ ? "sequence" : "single value");
      return TSR_OK;
    }
    node = e->value;
    *dot = '.';
  }
  tsr_yaml_node *val;
  TSR_CALL(override_value(ovr, eq + 1, &val));
  tsr_yaml_entry *e = tsr_yaml_find(node, seg);
  if (!e) return tsr_yaml_add(node, seg, ovr, 0, 1, val);
  tsr_yaml_free(e->value);
  *e = (tsr_yaml_entry){e->key, ovr, 0, 1, val};
  return TSR_OK;
}

/* ---- sections ----------------------------------------------------------------------- */

static const char *model_names[TSR_MODEL_COUNT];

/* The models' names in table order (kernels/models.c is the one list). */
static void name_models(void) {
  for (int m = 0; m < TSR_MODEL_COUNT; ++m) model_names[m] = tsr_models[m].name;
}

static void read_model(tsr_vctx *v, const tsr_yaml_node *root, const tsr_yaml_entry *e) {
  name_models();
  char list[256];
  tsr_join(list, sizeof list, model_names, TSR_MODEL_COUNT);
  if (!e) {
    tsr_vat(v, root, "model: missing; give one of %s", list);
    return;
  }
  int m;
  if (!tsr_vchoice(v, "model", e->value, model_names, TSR_MODEL_COUNT, &m)) return;
  v->c->model = (tsr_model_id)m;
  v->c->ncomp = tsr_models[m].ncomp;
}

static void read_name(tsr_vctx *v, const tsr_yaml_entry *e) {
  tsr_case *c = v->c;
  const char *name = NULL;
  if (e) {
    if (!tsr_vstring(v, "name", e->value, &name)) return;
    if (!name[0] || name[strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                      "0123456789_.-")]) {
      tsr_vat(v, e->value, "name: '%s' has characters other than letters, digits, _ . -; it "
              "names the output folder", name);
      return;
    }
    c->name = tsr_vstrdup(v, name);
    return;
  }
  /* the file's stem, made safe for a folder name */
  const char *base = strrchr(c->path, '/');
  base = base ? base + 1 : c->path;
  const char *ext = strrchr(base, '.');
  size_t n = ext && ext != base ? (size_t)(ext - base) : strlen(base);
  c->name = malloc(n ? n + 1 : 5);
  if (!c->name) {
    v->oom = 1;
    return;
  }
  if (!n) strcpy(c->name, "case");
  for (size_t i = 0; i < n; ++i) {
    char ch = base[i];
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '_' || ch == '.' || ch == '-';
    c->name[i] = ok ? ch : '_';
  }
  if (n) c->name[n] = '\0';
}

static void read_precision(tsr_vctx *v, const tsr_yaml_entry *pe) {
  static const char *const precisions[] = {"double", "single"};
  int p;
  if (pe && tsr_vchoice(v, "precision", pe->value, precisions, 2, &p))
    v->c->precision = p == 0 ? TSR_PRECISION_DOUBLE : TSR_PRECISION_SINGLE;
  else if (!pe && v->c->method == TSR_METHOD_PINN)
    v->c->precision = TSR_PRECISION_SINGLE; /* networks train in fp32 unless asked */
}

static void read_method_backend(tsr_vctx *v, const tsr_yaml_entry *me,
                                const tsr_yaml_entry *be) {
  static const char *const methods[] = {"explicit", "implicit", "pinn", "parareal"};
  static const char *const backends[] = {"auto", "host", "cuda"};
  int m, b;
  if (me && tsr_vchoice(v, "method", me->value, methods, 4, &m)) {
    if (m <= 2)
      v->c->method = m == 0 ? TSR_METHOD_EXPLICIT : m == 1 ? TSR_METHOD_IMPLICIT : TSR_METHOD_PINN;
    else
      tsr_vat(v, me->value, "method: %s is not available in this version; use explicit, "
              "implicit or pinn", methods[m]);
  }
  /* whether this build and machine can run cuda is the run's question, not the case's */
  if (be && tsr_vchoice(v, "backend", be->value, backends, 3, &b))
    v->c->backend = b == 0 ? TSR_BACKEND_AUTO : b == 1 ? TSR_BACKEND_HOST : TSR_BACKEND_CUDA;
}

/* A sequence of want numbers (want 0: dimension unknown, only the items are checked). */
static int read_numbers(tsr_vctx *v, const char *key, const tsr_yaml_node *n, int want,
                        double *out) {
  if (!tsr_vseq(v, key, n)) return 0;
  if (want && n->n != want) {
    tsr_vat(v, n, "%s: expected %d numbers (one per axis of grid.cells), got %d", key, want,
            n->n);
    return 0;
  }
  int ok = 1;
  char k[64];
  for (int i = 0; i < n->n; ++i) {
    double x = 0.0;
    snprintf(k, sizeof k, "%s[%d]", key, i);
    ok &= tsr_vnumber(v, k, n->items[i], &x);
    if (i < 3) out[i] = x;
  }
  return ok && want;
}

/* A sequence of want integers >= 1 (want 0: two or three, the grid's dimension; one more
 * with method pinn, whose space may be 1-D). */
static int read_counts(tsr_vctx *v, const char *key, const tsr_yaml_node *n, int want,
                       int *out) {
  if (!tsr_vseq(v, key, n)) return 0;
  int one = !want && v->c->method == TSR_METHOD_PINN && n->n == 1;
  if (want ? n->n != want : n->n != 2 && n->n != 3 && !one) {
    if (want)
      tsr_vat(v, n, "%s: expected %d positive integers (one per axis of grid.cells), got %d "
              "values", key, want, n->n);
    else if (n->n == 1)
      tsr_vat(v, n, "%s: a 1-D grid is for method: pinn; the explicit method needs 2 or 3 "
              "positive integers", key);
    else if (v->c->method == TSR_METHOD_PINN)
      tsr_vat(v, n, "%s: expected 1, 2 or 3 positive integers, got %d values", key, n->n);
    else
      tsr_vat(v, n, "%s: expected 2 or 3 positive integers, got %d values", key, n->n);
    return 0;
  }
  int ok = 1;
  char k[64];
  for (int i = 0; i < n->n; ++i) {
    long x;
    snprintf(k, sizeof k, "%s[%d]", key, i);
    if (!tsr_vint(v, k, n->items[i], &x)) {
      ok = 0;
    } else if (x < 1) {
      tsr_vat(v, n->items[i], "%s: must be >= 1, got %ld", k, x);
      ok = 0;
    } else {
      out[i] = (int)x;
    }
  }
  return ok;
}

/* Box corners are int: a periodic image shifts a box by a whole axis and ghosts reach past it,
 * so an axis of 2 x TSR_CASE_MAX_AXIS_CELLS plus the deepest ghosts still fits. The product is
 * int64 in the code and a double in its figures (cells/s, partition weights, memory): up to
 * TSR_CASE_MAX_CELLS it is exact in both. Larger grids wrapped to negative cell counts and
 * byte counts ("out of memory" for 18446744022169944072 bytes). */
static int grid_size_ok(tsr_vctx *v, const tsr_yaml_node *n, const int *cells) {
  int ok = 1;
  double total = 1.0;
  for (int i = 0; i < n->n; ++i) {
    total *= cells[i];
    if (cells[i] <= TSR_CASE_MAX_AXIS_CELLS) continue;
    tsr_vat(v, n->items[i], "grid.cells[%d]: at most %d cells per axis (box corners are 32-bit "
            "integers, with room for ghosts and periodic images), got %d", i,
            TSR_CASE_MAX_AXIS_CELLS, cells[i]);
    ok = 0;
  }
  if (ok && total > (double)TSR_CASE_MAX_CELLS) {
    tsr_vat(v, n, "grid.cells: %.4g cells in all, more than tessera counts (at most 2^53 = "
            "%.4g, exactly as an int64 and a double); give fewer cells", total,
            (double)TSR_CASE_MAX_CELLS);
    ok = 0;
  }
  return ok;
}

static void read_grid(tsr_vctx *v, const tsr_yaml_node *root, const tsr_yaml_entry *e) {
  static const char *const keys[] = {"cells", "lo", "hi", "periodic"};
  tsr_case *c = v->c;
  if (!e) {
    tsr_vat(v, root, "grid: missing; e.g. grid: {cells: [64, 64]}");
    return;
  }
  if (!tsr_vmap(v, "grid", e->value)) {
    if (tsr_yaml_is_null(e->value)) tsr_vkey(v, e, "grid: missing 'cells'; e.g. cells: [64, 64]");
    return;
  }
  const tsr_yaml_node *g = e->value;
  tsr_vkeys(v, "grid", g, keys, 4);
  const tsr_yaml_entry *ce = tsr_yaml_find(g, "cells"), *le = tsr_yaml_find(g, "lo"),
                       *he = tsr_yaml_find(g, "hi"), *pe = tsr_yaml_find(g, "periodic");
  int cells[3] = {1, 1, 1};
  if (!ce)
    tsr_vkey(v, e, "grid: missing 'cells'; e.g. cells: [64, 64]");
  else if (read_counts(v, "grid.cells", ce->value, 0, cells) &&
           grid_size_ok(v, ce->value, cells)) {
    c->dim = ce->value->n;
    memcpy(c->cells, cells, sizeof cells);
  }
  double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
  int lo_ok = !le || read_numbers(v, "grid.lo", le->value, c->dim, lo);
  int hi_ok = !he || read_numbers(v, "grid.hi", he->value, c->dim, hi);
  if (c->dim && lo_ok && hi_ok) {
    for (int a = 0; a < c->dim; ++a) {
      if (hi[a] > lo[a]) continue;
      const tsr_yaml_node *at = he ? he->value->items[a] : le->value->items[a];
      tsr_vat(v, at, "grid.hi[%d]: must be > grid.lo[%d] = %g, got %g", a, a, lo[a], hi[a]);
    }
    memcpy(c->lo, lo, sizeof lo);
    memcpy(c->hi, hi, sizeof hi);
  }
  if (!pe) return;
  const tsr_yaml_node *p = pe->value;
  int all;
  if (p && p->kind == TSR_YAML_SCALAR) {
    if (tsr_vbool(v, "grid.periodic", p, &all))
      for (int a = 0; a < c->dim; ++a) c->periodic[a] = all;
    return;
  }
  if (!tsr_vseq(v, "grid.periodic", p)) return;
  if (c->dim && p->n != c->dim) {
    tsr_vat(v, p, "grid.periodic: expected true/false or %d booleans (one per axis), got %d",
            c->dim, p->n);
    return;
  }
  char k[64];
  for (int a = 0; a < p->n; ++a) {
    snprintf(k, sizeof k, "grid.periodic[%d]", a);
    if (tsr_vbool(v, k, p->items[a], &all) && a < 3) c->periodic[a] = all;
  }
}

static const char *reserved_kind(const char *name) {
  static const char *const vars[] = {"x", "y", "z", "t", "pi"};
  static const char *const funcs[] = {"sin",  "cos",  "tan",  "asin",  "acos", "atan", "atan2",
                                      "sinh", "cosh", "tanh", "exp",   "log",  "log10",
                                      "sqrt", "cbrt", "fabs", "floor", "ceil", "pow",  "fmin",
                                      "fmax", "fmod", "erf"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; ++i)
    if (strcmp(name, vars[i]) == 0) return i < 4 ? "a coordinate" : "a constant";
  for (size_t i = 0; i < sizeof funcs / sizeof *funcs; ++i)
    if (strcmp(name, funcs[i]) == 0) return "a function";
  return NULL;
}

static void add_param(tsr_vctx *v, const char *name, double value, tsr_loc loc) {
  tsr_case *c = v->c;
  c->param_name[c->nparam] = tsr_vstrdup(v, name);
  c->param_value[c->nparam] = value;
  c->param_loc[c->nparam] = loc;
  c->nparam++;
}

static void read_params(tsr_vctx *v, const tsr_yaml_entry *e) {
  tsr_case *c = v->c;
  const tsr_yaml_node *map = e && tsr_vmap(v, "params", e->value) ? e->value : NULL;
  const tsr_model_info *m = c->ncomp ? &tsr_models[c->model] : NULL;
  char key[128];
  for (int i = 0; m && i < m->nparam; ++i) {
    const tsr_param_spec *s = &m->param[i];
    const tsr_yaml_entry *pe = tsr_yaml_find(map, s->name);
    double x = s->def;
    tsr_loc loc = {NULL, 0, 0};
    if (pe) {
      snprintf(key, sizeof key, "params.%s", s->name);
      if (!tsr_vnumber(v, key, pe->value, &x)) continue;
      if (s->min_open ? !(x > s->min) : !(x >= s->min))
        tsr_vat(v, pe->value, "%s: must be %s %g, got %g (%s)", key, s->min_open ? ">" : ">=",
                s->min, x, s->doc);
      else if (s->has_max && (s->max_open ? !(x < s->max) : !(x <= s->max)))
        tsr_vat(v, pe->value, "%s: must be %s %g, got %g (%s)", key, s->max_open ? "<" : "<=",
                s->max, x, s->doc);
      else if (s->integer && x != (double)(long long)x)
        tsr_vat(v, pe->value, "%s: must be a whole number, got %g (%s)", key, x, s->doc);
      loc = (tsr_loc){pe->value->file, pe->value->line, pe->value->col};
    }
    add_param(v, s->name, x, loc);
  }
  for (int i = 0; map && i < map->n; ++i) {
    const tsr_yaml_entry *pe = &map->entries[i];
    int own = 0;
    for (int k = 0; m && k < m->nparam && !own; ++k) own = strcmp(m->param[k].name, pe->key) == 0;
    if (own) continue;
    const char *name = pe->key, *kind = reserved_kind(name);
    snprintf(key, sizeof key, "params.%s", name);
    int ident = (name[0] < '0' || name[0] > '9') && name[0] &&
                !name[strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                   "0123456789_")];
    if (!ident) {
      tsr_vkey(v, pe, "%s: '%s' is not a valid name; use letters, digits and _, not starting "
               "with a digit", key, name);
      continue;
    }
    if (kind) {
      tsr_vkey(v, pe, "%s: '%s' is %s in expressions; choose another name", key, name, kind);
      continue;
    }
    double x;
    if (!tsr_vnumber(v, key, pe->value, &x)) continue;
    if (c->nparam == TSR_MAX_PARAMS) {
      tsr_vkey(v, pe, "%s: too many params (at most %d)", key, TSR_MAX_PARAMS);
      return;
    }
    add_param(v, name, x, (tsr_loc){pe->value->file, pe->value->line, pe->value->col});
  }
}

static void read_all(tsr_vctx *v, const tsr_yaml_node *root) {
  static const char *const keys[] = {"name",     "model",  "method", "backend",  "precision",
                                     "grid",     "params", "initial", "source",   "exact",
                                     "boundary", "time",   "decomposition", "output", "comm",
                                     "gpu",      "rebalance", "debug", "pinn", "petsc",
                                     "parareal"};
  tsr_case *c = v->c;
  tsr_vkeys(v, "", root, keys, (int)(sizeof keys / sizeof *keys));
  read_name(v, tsr_yaml_find(root, "name"));
  read_model(v, root, tsr_yaml_find(root, "model"));
  read_method_backend(v, tsr_yaml_find(root, "method"), tsr_yaml_find(root, "backend"));
  read_precision(v, tsr_yaml_find(root, "precision"));
  read_grid(v, root, tsr_yaml_find(root, "grid"));
  read_params(v, tsr_yaml_find(root, "params"));
  const tsr_yaml_entry *ie = tsr_yaml_find(root, "initial"), *x;
  int steady = c->ncomp && tsr_models[c->model].steady;
  if (ie && steady) {
    tsr_vkey(v, ie, "initial: model %s is steady: it has no initial condition; remove the "
             "section", tsr_models[c->model].name);
  } else if (ie) {
    tsr_case_read_exprs(v, "initial", ie, 1, c->initial);
  } else if (steady) {
  } else if (c->ncomp) {
    char comps[128];
    tsr_join(comps, sizeof comps, tsr_models[c->model].comp, c->ncomp);
    tsr_vat(v, root, "initial: missing; give an expression for each component of model %s (%s)",
            tsr_models[c->model].name, comps);
  } else {
    tsr_vat(v, root, "initial: missing; give an expression for each component of the model");
  }
  if ((x = tsr_yaml_find(root, "source"))) tsr_case_read_exprs(v, "source", x, 0, c->source);
  if ((x = tsr_yaml_find(root, "exact"))) tsr_case_read_exprs(v, "exact", x, 0, c->exact);
  tsr_case_read_boundary(v, tsr_yaml_find(root, "boundary"));
  if (c->method == TSR_METHOD_PINN)
    tsr_case_read_pinn_time(v, root, tsr_yaml_find(root, "time"));
  else if (c->method == TSR_METHOD_IMPLICIT)
    tsr_case_read_implicit_time(v, root, tsr_yaml_find(root, "time"));
  else
    tsr_case_read_time(v, root, tsr_yaml_find(root, "time"));
  tsr_case_read_decomposition(v, tsr_yaml_find(root, "decomposition"));
  tsr_case_read_output(v, tsr_yaml_find(root, "output"));
  tsr_case_read_comm(v, tsr_yaml_find(root, "comm"));
  tsr_case_read_gpu(v, tsr_yaml_find(root, "gpu"));
  tsr_case_read_rebalance(v, tsr_yaml_find(root, "rebalance"));
  tsr_case_read_debug(v, tsr_yaml_find(root, "debug"));
  tsr_case_read_pinn(v, root, tsr_yaml_find(root, "pinn"));
  tsr_case_read_implicit(v, root, tsr_yaml_find(root, "petsc"));
  tsr_case_read_parareal(v, root, tsr_yaml_find(root, "parareal"));
}

/* A case with its provenance filled in and every default set; NULL when out of memory. */
static tsr_case *case_new(const char *name, const char *text, int noverride,
                          char *const *overrides) {
  tsr_case *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->path = strdup(name);
  c->text = strdup(text);
  c->overrides = calloc((size_t)(noverride > 0 ? noverride : 1), sizeof *c->overrides);
  if (!c->path || !c->text || !c->overrides) goto fail;
  uint64_t h = fnv1a(0xcbf29ce484222325ULL, text, strlen(text));
  for (int i = 0; i < noverride; ++i) {
    if (!(c->overrides[i] = strdup(overrides[i]))) goto fail;
    c->noverride = i + 1;
    /* the NUL separates text and overrides, so "a" + "b=1" never hashes as "ab" + "=1" */
    h = fnv1a(h, "", 1);
    h = fnv1a(h, overrides[i], strlen(overrides[i]));
  }
  c->hash = h;
  c->output.keep = 3;
  c->comm.timeout = 300.0;
  c->rebalance.every = 100;
  c->rebalance.threshold = 0.05;
  c->rebalance.enabled = -1;
  c->rebalance.reserve = 0.5;
  c->rebalance.clock = TSR_CLOCK_WALL;
  c->output.checkpoint_async = 1;
  c->model = TSR_MODEL_HEAT; /* meaningful only once ncomp > 0 */
  for (int a = 0; a < 3; ++a) {
    c->cells[a] = 1;
    c->hi[a] = 1.0;
    c->decomp.ranks[a] = 1;
  }
  c->time.scheme = TSR_SCHEME_SSPRK3;
  c->time.dt_auto = 1;
  c->time.cfl = 0.9;
  c->time.fuse = 1;
  c->decomp.partition = TSR_PART_RCB;
  c->decomp.time_slices = 1;
  return c;
fail:
  tsr_case_destroy(&c);
  return NULL;
}

tsr_err tsr_case_load_string(const char *name, const char *text, int noverride,
                             char *const *overrides, tsr_case **out) {
  *out = NULL;
  tsr_case *c = case_new(name, text, noverride, overrides);
  TSR_CHECK(c, TSR_ERR_MEMORY, "out of memory reading case '%s'", name);
  tsr_yaml_node *root = NULL;
  tsr_err err = tsr_yaml_parse(c->path, c->text, &root);
  if (err) {
    tsr_case_destroy(&c);
    return err;
  }
  if (!root && !(root = tsr_yaml_map(c->path, 1, 1))) err = TSR_ERR_MEMORY;
  tsr_vctx v = {.c = c};
  if (!err && root->kind != TSR_YAML_MAP)
    tsr_vat(&v, root, "the case must be a map of keys (model:, grid:, time:, ...)");
  for (int i = 0; !err && root->kind == TSR_YAML_MAP && i < c->noverride; ++i)
    err = apply_override(&v, root, c->overrides[i]);
  if (!err && root->kind == TSR_YAML_MAP) read_all(&v, root);
  tsr_yaml_free(root);
  if (err) {
    tsr_vfinish(&v);
    tsr_case_destroy(&c);
    return tsr_err_set(err, __FILE__, __LINE__, "out of memory reading case '%s'", name);
  }
  err = tsr_vfinish(&v);
  if (err) {
    tsr_case_destroy(&c);
    return err;
  }
  *out = c;
  return TSR_OK;
}

tsr_err tsr_case_load(const char *path, int noverride, char *const *overrides, tsr_case **out) {
  *out = NULL;
  struct stat st;
  /* a path that names no readable file is the user's input (exit 2: supervise does not retry) */
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "cannot read case file '%s': %s; check the path", path, strerror(EISDIR));
  FILE *f = fopen(path, "rb");
  if (!f)
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "cannot read case file '%s': %s; check the path", path, strerror(errno));
  /* the cap is kept while reading: a pipe (tessera run <(...)) has no size to stat first, and
   * /dev/zero, or a huge file given by mistake, was read until memory ran out */
  size_t len = 0;
  char *buf = tsr_text_read_max(f, TSR_CASE_MAX_BYTES, &len);
  int bad = buf && ferror(f);
  int saved = errno;
  fclose(f);
  TSR_CHECK(buf, TSR_ERR_MEMORY, "out of memory reading case file '%s'", path);
  if (len > TSR_CASE_MAX_BYTES) {
    free(buf);
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "case file '%s' is larger than %d MiB, the most tessera reads (a case file "
                       "is a few KB of YAML); check the path",
                       path, TSR_CASE_MAX_BYTES >> 20);
  }
  if (bad) {
    free(buf);
    return tsr_err_set(TSR_ERR_IO, __FILE__, __LINE__,
                       "cannot read case file '%s': %s; check the path", path, strerror(saved));
  }
  buf[len] = '\0';
  if (strlen(buf) != len) {
    size_t at = strlen(buf);
    free(buf);
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "%s: a NUL byte at offset %zu; a case file is YAML text", path, at);
  }
  tsr_err err = tsr_case_load_string(path, buf, noverride, overrides, out);
  free(buf);
  return err;
}

/* Prefixes of --set keys that change how a run is laid out or where it writes, never its
 * numbers (bitwise invariance across decompositions and backends, DESIGN.md). */
static int layout_override(const char *o) {
  /* pinn.adam.iterations and pinn.lbfgs.iterations say where training stops, not where it goes
   * (the learning rate's schedule depends on neither): a run continues to more iterations, as
   * to a later time.end. Where they also say where a phase or a causal slab begins, the trainer
   * compares them with the checkpoint's (solver/pinn/train_ckpt.c, io/pinn_state.c) */
  static const char *const pre[] = {"decomposition.", "output.", "backend=", "comm.",
                                    "gpu.", "rebalance.", "debug.", "pinn.adam.iterations=",
                                    "pinn.lbfgs.iterations=", "time.fuse=", "pinn.log_every="};
  for (size_t i = 0; i < sizeof pre / sizeof pre[0]; ++i)
    if (strncmp(o, pre[i], strlen(pre[i])) == 0) return 1;
  return 0;
}

uint64_t tsr_case_restart_hash(const tsr_case *c) {
  uint64_t h = fnv1a(0xcbf29ce484222325ULL, c->text, strlen(c->text));
  for (int i = 0; i < c->noverride; ++i) {
    if (layout_override(c->overrides[i])) continue;
    h = fnv1a(h, "", 1);
    h = fnv1a(h, c->overrides[i], strlen(c->overrides[i]));
  }
  return h;
}
