/* Case sections read after model and grid: initial, source, exact (component -> expression),
 * boundary (faces, their types, values and the periodicity they imply), time, decomposition,
 * output, comm, gpu, rebalance and debug. The schema is documented at the top of io/case.c. */
#define _POSIX_C_SOURCE 200809L /* strdup, strcasecmp, stat */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "io/case_validate.h"

static const char *const bc_type_names[] = {"dirichlet", "neumann", "periodic"};
static const char axis_name[3] = {'x', 'y', 'z'};

static void comp_list(const tsr_case *c, char *buf, size_t size) {
  tsr_join(buf, size, tsr_models[c->model].comp, c->ncomp);
}

static int comp_index(const tsr_case *c, const char *name) {
  for (int k = 0; k < c->ncomp; ++k)
    if (strcmp(tsr_models[c->model].comp[k], name) == 0) return k;
  return -1;
}

/* Reports keys of map that are not components of the model. */
static void check_comp_keys(tsr_vctx *v, const char *path, const tsr_yaml_node *map) {
  const tsr_case *c = v->c;
  char comps[128];
  comp_list(c, comps, sizeof comps);
  for (int i = 0; i < map->n; ++i) {
    const tsr_yaml_entry *e = &map->entries[i];
    if (comp_index(c, e->key) >= 0) continue;
    const char *s = tsr_suggest(e->key, tsr_models[c->model].comp, c->ncomp);
    if (s)
      tsr_vkey(v, e, "%s: unknown component '%s' (did you mean '%s'?); model %s has components %s",
               path, e->key, s, tsr_models[c->model].name, comps);
    else
      tsr_vkey(v, e, "%s: unknown component '%s'; model %s has components %s", path, e->key,
               tsr_models[c->model].name, comps);
  }
}

/* Reads map (component -> expression) into out[]; reports missing components at e when every
 * one is required. */
static void read_comp_map(tsr_vctx *v, const char *path, const tsr_yaml_entry *e,
                          const tsr_yaml_node *map, int required, tsr_case_expr *out) {
  const tsr_case *c = v->c;
  check_comp_keys(v, path, map);
  char key[128], comps[128];
  comp_list(c, comps, sizeof comps);
  for (int k = 0; k < c->ncomp; ++k) {
    const char *name = tsr_models[c->model].comp[k];
    const tsr_yaml_entry *ce = tsr_yaml_find(map, name);
    snprintf(key, sizeof key, "%s.%s", path, name);
    if (ce)
      tsr_vexpr(v, key, ce->value, &out[k]);
    else if (required)
      tsr_vkey(v, e, "%s: missing '%s' (model %s has components %s)", path, name,
               tsr_models[c->model].name, comps);
  }
}

void tsr_case_read_exprs(tsr_vctx *v, const char *key, const tsr_yaml_entry *e, int required,
                         tsr_case_expr *out) {
  if (!tsr_vmap(v, key, e->value)) {
    if (required && tsr_yaml_is_null(e->value))
      tsr_vkey(v, e, "%s: expected a map of component: expression, got nothing", key);
    return;
  }
  if (v->c->ncomp == 0) return; /* unknown model: already reported, components unknown */
  read_comp_map(v, key, e, e->value, required, out);
}

/* The value of a dirichlet/neumann face: absent ("0"), one expression for every component, or
 * a map component -> expression naming every component. */
static void read_bc_value(tsr_vctx *v, const char *path, const tsr_yaml_entry *ve,
                          tsr_case_bc *bc) {
  const tsr_case *c = v->c;
  char key[128];
  snprintf(key, sizeof key, "%s.value", path);
  if (!ve) {
    for (int k = 0; k < c->ncomp; ++k) tsr_vexpr_default(v, &bc->value[k], key, "0");
    return;
  }
  const tsr_yaml_node *n = ve->value;
  if (n && n->kind == TSR_YAML_MAP) {
    if (c->ncomp) read_comp_map(v, key, ve, n, 1, bc->value);
    return;
  }
  for (int k = 0; k < c->ncomp; ++k)
    if (!tsr_vexpr(v, key, n, &bc->value[k])) break;
  if (c->ncomp == 0) { /* still check the value's shape */
    tsr_case_expr tmp = {0};
    tsr_vexpr(v, key, n, &tmp);
    tsr_case_expr_clear(&tmp);
  }
}

/* One face entry {type, value}. Returns 1 when its type is known (written to bc->type). */
static int read_face(tsr_vctx *v, const tsr_yaml_entry *fe, tsr_case_bc *bc) {
  static const char *const keys[] = {"type", "value"};
  char path[64], key[80];
  snprintf(path, sizeof path, "boundary.%s", fe->key);
  const tsr_yaml_node *n = fe->value;
  if (!n || n->kind != TSR_YAML_MAP) {
    tsr_vat(v, n, "%s: expected a map such as {type: dirichlet, value: 0}", path);
    return 0;
  }
  tsr_vkeys(v, path, n, keys, 2);
  const tsr_yaml_entry *te = tsr_yaml_find(n, "type"), *ve = tsr_yaml_find(n, "value");
  if (!te) {
    tsr_vkey(v, fe, "%s: missing 'type'; expected dirichlet, neumann or periodic", path);
    return 0;
  }
  snprintf(key, sizeof key, "%s.type", path);
  int t;
  if (!tsr_vchoice(v, key, te->value, bc_type_names, 3, &t)) return 0;
  bc->type = (tsr_bc_type)t;
  if (bc->type == TSR_BC_PERIODIC) {
    if (ve) tsr_vkey(v, ve, "%s.value: a periodic face takes no value; remove it", path);
    return 1;
  }
  read_bc_value(v, path, ve, bc);
  return 1;
}

static void bc_clear(tsr_case_bc *bc) {
  for (int k = 0; k < TSR_MAX_COMP; ++k) tsr_case_expr_clear(&bc->value[k]);
}

static void bc_copy(tsr_vctx *v, tsr_case_bc *dst, const tsr_case_bc *src) {
  dst->type = src->type;
  for (int k = 0; k < TSR_MAX_COMP; ++k) tsr_vexpr_copy(v, &dst->value[k], &src->value[k]);
}

/* Settles periodicity of axis a from grid.periodic and the two faces' explicit types. */
static void resolve_axis(tsr_vctx *v, int a, const tsr_yaml_entry *const fe[TSR_NFACE],
                         const int ok[TSR_NFACE]) {
  tsr_case *c = v->c;
  int f0 = 2 * a;
  int says_periodic = 0;
  for (int f = f0; f < f0 + 2; ++f) says_periodic |= ok[f] && c->bc[f].type == TSR_BC_PERIODIC;
  for (int f = f0; f < f0 + 2 && (c->periodic[a] || says_periodic); ++f) {
    if (!ok[f] || c->bc[f].type == TSR_BC_PERIODIC) continue;
    const char *tn = bc_type_names[c->bc[f].type];
    if (c->periodic[a])
      tsr_vkey(v, fe[f],
               "boundary.%s: type %s on axis %c, which grid.periodic makes periodic; remove "
               "boundary.%s or make %c non-periodic in grid.periodic",
               tsr_case_face_names[f], tn, axis_name[a], tsr_case_face_names[f], axis_name[a]);
    else
      tsr_vkey(v, fe[f ^ 1],
               "boundary.%s: type periodic needs the opposite face %s periodic too (it says "
               "%s)",
               tsr_case_face_names[f ^ 1], tsr_case_face_names[f], tn);
  }
  if (says_periodic) c->periodic[a] = 1;
  if (!c->periodic[a]) return;
  for (int f = f0; f < f0 + 2; ++f) {
    bc_clear(&c->bc[f]);
    c->bc[f].type = TSR_BC_PERIODIC;
  }
}

void tsr_case_read_boundary(tsr_vctx *v, const tsr_yaml_entry *e) {
  static const char *const keys[] = {"default", "xlo", "xhi", "ylo", "yhi", "zlo", "zhi"};
  tsr_case *c = v->c;
  const tsr_yaml_node *map = e ? e->value : NULL;
  const tsr_yaml_entry *fe[TSR_NFACE] = {0}, *de = NULL;
  int ok[TSR_NFACE] = {0}, def_ok = 0;
  tsr_case_bc def = {0};
  if (e && tsr_vmap(v, "boundary", map)) {
    tsr_vkeys(v, "boundary", map, keys, 7);
    de = tsr_yaml_find(map, "default");
    if (de) def_ok = read_face(v, de, &def);
    for (int f = 0; f < TSR_NFACE; ++f) {
      fe[f] = tsr_yaml_find(map, tsr_case_face_names[f]);
      if (!fe[f]) continue;
      if (c->dim && f >= 2 * c->dim) {
        tsr_vkey(v, fe[f], "boundary.%s: %c faces exist only in %dD; grid.cells has %d value%s",
                 tsr_case_face_names[f], axis_name[f / 2], f / 2 + 1, c->dim,
                 c->dim == 1 ? "" : "s");
        fe[f] = NULL;
        continue;
      }
      ok[f] = read_face(v, fe[f], &c->bc[f]);
    }
  }
  if (c->dim == 0 || c->ncomp == 0) { /* grid or model unusable: already reported */
    bc_clear(&def);
    return;
  }
  for (int a = 0; a < c->dim; ++a) resolve_axis(v, a, fe, ok);
  int def_reported = 0;
  for (int f = 0; f < 2 * c->dim; ++f) {
    if (fe[f] || c->periodic[f / 2]) continue;
    if (de && def_ok && def.type == TSR_BC_PERIODIC) {
      if (!def_reported)
        tsr_vkey(v, de,
                 "boundary.default: type periodic cannot be a default (face %s of axis %c would "
                 "take it); make axes periodic with grid.periodic or periodic on both faces",
                 tsr_case_face_names[f], axis_name[f / 2]);
      def_reported = 1;
    } else if (de && def_ok) {
      bc_copy(v, &c->bc[f], &def);
    } else if (!de) {
      char key[64];
      snprintf(key, sizeof key, "boundary.%s.value", tsr_case_face_names[f]);
      c->bc[f].type = TSR_BC_DIRICHLET;
      for (int k = 0; k < c->ncomp; ++k) tsr_vexpr_default(v, &c->bc[f].value[k], key, "0");
    }
  }
  bc_clear(&def);
}

/* time.end or time.steps (one of them) of the time section e, a map: shared by the methods
 * that step in time. Returns the steps entry, or NULL. */
const tsr_yaml_entry *tsr_case_read_time_span(tsr_vctx *v, const tsr_yaml_entry *e) {
  tsr_case *c = v->c;
  const tsr_yaml_node *t = e->value;
  double d;
  const tsr_yaml_entry *ee = tsr_yaml_find(t, "end"), *se = tsr_yaml_find(t, "steps");
  if (ee && se) tsr_vkey(v, ee, "time: give either time.end or time.steps, not both");
  if (!ee && !se) tsr_vkey(v, e, "time: missing time.end or time.steps; give one (e.g. end: 0.1)");
  if (ee && tsr_vnumber(v, "time.end", ee->value, &d)) {
    if (d > 0.0) {
      c->time.has_end = 1;
      c->time.end = d;
    } else {
      tsr_vat(v, ee->value, "time.end: must be > 0, got %g", d);
    }
  }
  /* as many as time.end may derive (solver/integrate.c), past int's 2^31 */
  int64_t n;
  if (se && tsr_vint64(v, "time.steps", se->value, TSR_CASE_MAX_STEPS, &n)) {
    if (n >= 1) {
      c->time.has_steps = 1;
      c->time.steps = (long)n;
    } else {
      tsr_vat(v, se->value, "time.steps: must be >= 1, got %lld", (long long)n);
    }
  }
  return se;
}

int tsr_case_read_scheme(tsr_vctx *v, const char *key, const tsr_yaml_node *n, tsr_scheme *out) {
  static const char *const schemes[] = {"euler", "forward_euler", "ssp_rk2", "rk2",
                                        "ssp_rk3", "rk3", "rk4"};
  static const tsr_scheme scheme_of[] = {TSR_SCHEME_EULER,  TSR_SCHEME_EULER,  TSR_SCHEME_SSPRK2,
                                         TSR_SCHEME_SSPRK2, TSR_SCHEME_SSPRK3, TSR_SCHEME_SSPRK3,
                                         TSR_SCHEME_RK4};
  int s;
  if (!tsr_vchoice(v, key, n, schemes, 7, &s)) return 0;
  *out = scheme_of[s];
  return 1;
}

void tsr_case_read_time_scheme(tsr_vctx *v, const tsr_yaml_node *t) {
  tsr_case *c = v->c;
  const tsr_yaml_entry *x;
  if ((x = tsr_yaml_find(t, "scheme")))
    tsr_case_read_scheme(v, "time.scheme", x->value, &c->time.scheme);
  double d;
  if ((x = tsr_yaml_find(t, "dt"))) {
    const tsr_yaml_node *n = x->value;
    if (n && n->kind == TSR_YAML_SCALAR && strcmp(n->text, "auto") == 0) {
      c->time.dt_auto = 1;
    } else if (tsr_vnumber(v, "time.dt", n, &d)) {
      if (d > 0.0) {
        c->time.dt_auto = 0;
        c->time.dt = d;
      } else {
        tsr_vat(v, n, "time.dt: must be > 0 (or auto), got %g", d);
      }
    }
  }
  if ((x = tsr_yaml_find(t, "cfl")) && tsr_vnumber(v, "time.cfl", x->value, &d)) {
    if (d > 0.0 && d <= 1.0)
      c->time.cfl = d;
    else
      tsr_vat(v, x->value, "time.cfl: must be in (0, 1], got %g", d);
  }
  long n;
  const tsr_yaml_node *fn = (x = tsr_yaml_find(t, "fuse")) ? x->value : NULL;
  if (fn && fn->kind == TSR_YAML_SCALAR && strcmp(fn->text, "auto") == 0)
    c->time.fuse = TSR_FUSE_AUTO;
  else if (fn && tsr_vint(v, "time.fuse", fn, &n)) {
    if (n >= 1 && n <= TSR_MAX_FUSE)
      c->time.fuse = (int)n;
    else
      tsr_vat(v, x->value, "time.fuse: steps per halo exchange, 1..%d or auto, got %ld (1: an "
              "exchange every stage)", TSR_MAX_FUSE, n);
  }
}

void tsr_case_read_time(tsr_vctx *v, const tsr_yaml_node *root, const tsr_yaml_entry *e) {
  static const char *const keys[] = {"scheme", "dt", "cfl", "end", "steps", "fuse"};
  if (!e) {
    tsr_vat(v, root, "time: missing; e.g. time: {end: 0.1}");
    return;
  }
  if (!tsr_vmap(v, "time", e->value)) {
    if (tsr_yaml_is_null(e->value))
      tsr_vkey(v, e, "time: missing time.end or time.steps; give one (e.g. end: 0.1)");
    return;
  }
  const tsr_yaml_node *t = e->value;
  tsr_vkeys(v, "time", t, keys, 6);
  tsr_case_read_time_scheme(v, t);
  tsr_case_read_time_span(v, e);
}

void tsr_case_read_decomposition(tsr_vctx *v, const tsr_yaml_entry *e) {
  static const char *const keys[] = {"partition", "ranks", "weights", "time_slices"};
  static const char *const parts[] = {"rcb", "slabs", "grid"}; /* tsr_part_kind order */
  tsr_case *c = v->c;
  if (!e || !tsr_vmap(v, "decomposition", e->value)) return;
  const tsr_yaml_node *d = e->value;
  tsr_vkeys(v, "decomposition", d, keys, 4);
  const tsr_yaml_entry *pe = tsr_yaml_find(d, "partition"), *re = tsr_yaml_find(d, "ranks"),
                       *we = tsr_yaml_find(d, "weights"), *te = tsr_yaml_find(d, "time_slices");
  int part = -1;
  if (pe && tsr_vchoice(v, "decomposition.partition", pe->value, parts, 3, &part))
    c->decomp.partition = (tsr_part_kind)part;
  if (re) {
    if (part >= 0 && part != TSR_PART_GRID)
      tsr_vkey(v, re, "decomposition.ranks: gives a grid partition, but "
               "decomposition.partition says %s; remove one of them", parts[part]);
    else
      c->decomp.partition = TSR_PART_GRID;
    int ranks[3] = {1, 1, 1};
    const tsr_yaml_node *n = re->value;
    if (c->dim && n && n->kind == TSR_YAML_SEQ && n->n != c->dim)
      tsr_vat(v, n, "decomposition.ranks: expected %d positive integers (one per axis of "
              "grid.cells), got %d values", c->dim, n->n);
    else if (c->dim && tsr_vseq(v, "decomposition.ranks", n) &&
             n->n == c->dim) { /* counts are checked only once the dimension is known */
      char k[64];
      int ok = 1;
      for (int a = 0; a < c->dim; ++a) {
        long x;
        snprintf(k, sizeof k, "decomposition.ranks[%d]", a);
        if (!tsr_vint(v, k, n->items[a], &x)) ok = 0;
        else if (x < 1) ok = 0, tsr_vat(v, n->items[a], "%s: must be >= 1, got %ld", k, x);
        else ranks[a] = (int)x;
      }
      if (ok) memcpy(c->decomp.ranks, ranks, sizeof ranks);
    }
  } else if (part == TSR_PART_GRID) {
    tsr_vkey(v, pe, "decomposition.partition: grid needs decomposition.ranks, e.g. ranks: "
             "[2, 2]");
  }
  if (we) {
    if (c->decomp.partition == TSR_PART_GRID) {
      tsr_vkey(v, we, "decomposition.weights: only used with partition rcb or slabs; remove it "
               "or drop the grid partition");
    } else if (tsr_vseq(v, "decomposition.weights", we->value)) {
      const tsr_yaml_node *n = we->value;
      free(c->decomp.weights);
      c->decomp.weights = calloc((size_t)(n->n ? n->n : 1), sizeof(double));
      if (!c->decomp.weights) {
        v->oom = 1;
        return;
      }
      c->decomp.nweights = n->n;
      char k[64];
      int ok = 1;
      double sum = 0.0;
      for (int i = 0; i < n->n; ++i) {
        snprintf(k, sizeof k, "decomposition.weights[%d]", i);
        double w;
        if (!tsr_vnumber(v, k, n->items[i], &w)) ok = 0;
        else if (w > 0.0) c->decomp.weights[i] = w, sum += w;
        else ok = 0, tsr_vat(v, n->items[i], "%s: must be > 0, got %g", k, w);
      }
      /* the partitioners cut at each rank's share of the sum (summed in rank order, as here):
       * an infinite sum made every share NaN and the boxes garbage */
      if (ok && !isfinite(sum))
        tsr_vat(v, n, "decomposition.weights: they add up to %g, past double's range: the "
                "partition divides each rank's weight by the sum; give relative speeds such as "
                "[1, 2]", sum);
    }
  }
  long ts;
  if (te && tsr_vint(v, "decomposition.time_slices", te->value, &ts)) {
    if (ts > 1 && c->method == TSR_METHOD_PINN && c->ncomp && tsr_models[c->model].steady)
      tsr_vat(v, te->value, "decomposition.time_slices: model %s is steady (no time axis to "
              "slice); use 1", tsr_models[c->model].name);
    else if (ts > 4096)
      tsr_vat(v, te->value, "decomposition.time_slices: at most 4096, got %ld", ts);
    else if (ts > 1 && c->method == TSR_METHOD_IMPLICIT)
      tsr_vat(v, te->value, "decomposition.time_slices: parareal runs the explicit method's "
              "steps in each slice; use method explicit, or time_slices 1 with method implicit");
    else if (ts > 1)
      c->decomp.time_slices = (int)ts; /* PINN time slabs, or parareal's slices */
    else if (ts < 1)
      tsr_vat(v, te->value, "decomposition.time_slices: must be >= 1, got %ld", ts);
  }
}

/* A schedule: N (steps), {steps: N} or {time: T}. */
static void read_every(tsr_vctx *v, const char *key, const tsr_yaml_entry *e,
                       tsr_case_every *out) {
  static const char *const keys[] = {"steps", "time"};
  const tsr_yaml_node *n = e->value;
  char k[96];
  /* none (the default) turns off what the case file set, e.g. --set output.snapshot_every=none */
  if (n && n->kind == TSR_YAML_SCALAR && !n->quoted &&
      (tsr_yaml_is_null(n) || !strcmp(n->text, "none"))) {
    *out = (tsr_case_every){0, 0.0};
    return;
  }
  if (n && n->kind == TSR_YAML_SCALAR && !n->quoted) {
    /* a plain number that is no integer is most likely a time written without its key */
    char *end;
    double d = strtod(n->text, &end);
    if (n->text[0] && !*end && isfinite(d) && d != floor(d)) {
      tsr_vat(v, n, "%s: expected an integer number of steps, got '%s'; for simulated time "
              "write {time: %s}", key, n->text, n->text);
      return;
    }
    long steps;
    if (!tsr_vint(v, key, n, &steps)) return;
    if (steps >= 1) *out = (tsr_case_every){steps, 0.0};
    else tsr_vat(v, n, "%s: must be >= 1 steps, got %ld", key, steps);
    return;
  }
  if (!n || n->kind != TSR_YAML_MAP) {
    tsr_vat(v, n, "%s: expected a number of steps (e.g. 500), {steps: 500}, {time: 0.25} or "
            "none", key);
    return;
  }
  tsr_vkeys(v, key, n, keys, 2);
  const tsr_yaml_entry *se = tsr_yaml_find(n, "steps"), *te = tsr_yaml_find(n, "time");
  if (se && te) {
    tsr_vkey(v, te, "%s: give either steps or time, not both", key);
    return;
  }
  if (!se && !te) {
    if (n->n == 0) tsr_vkey(v, e, "%s: expected {steps: N} or {time: T}, got an empty map", key);
    return; /* otherwise only unknown keys, already reported */
  }
  if (se) {
    long steps;
    snprintf(k, sizeof k, "%s.steps", key);
    if (!tsr_vint(v, k, se->value, &steps)) return;
    if (steps >= 1) *out = (tsr_case_every){steps, 0.0};
    else tsr_vat(v, se->value, "%s: must be >= 1, got %ld", k, steps);
    return;
  }
  double t;
  snprintf(k, sizeof k, "%s.time", key);
  if (!tsr_vnumber(v, k, te->value, &t)) return;
  if (t > 0.0) *out = (tsr_case_every){0, t};
  else tsr_vat(v, te->value, "%s: must be > 0 (simulated time between writes), got %g", k, t);
}

void tsr_case_read_output(tsr_vctx *v, const tsr_yaml_entry *e) {
  static const char *const keys[] = {"dir",  "monitor_every", "progress", "checkpoint_every",
                                     "keep", "io", "snapshot_every", "snapshot_precision",
                                     "checkpoint_async"};
  static const char *const ios[] = {"auto", "serial", "parts"};
  static const char *const precisions[] = {"double", "single"};
  static const char *const modes[] = {"auto", "bar", "lines", "none"}; /* tsr_progress_mode */
  tsr_case *c = v->c;
  const tsr_yaml_node *o = e && tsr_vmap(v, "output", e->value) ? e->value : NULL;
  const tsr_yaml_entry *x;
  if (o) tsr_vkeys(v, "output", o, keys, (int)(sizeof keys / sizeof *keys));
  const char *dir = NULL;
  if ((x = tsr_yaml_find(o, "dir")) && tsr_vstring(v, "output.dir", x->value, &dir)) {
    if (!dir[0]) tsr_vat(v, x->value, "output.dir: expected a folder name, got an empty string");
    else c->output.dir = tsr_vstrdup(v, dir);
  }
  if (!c->output.dir && c->name) {
    size_t n = strlen(c->name) + 5;
    c->output.dir = malloc(n);
    if (c->output.dir) snprintf(c->output.dir, n, "out/%s", c->name);
    else v->oom = 1;
  }
  long every;
  if ((x = tsr_yaml_find(o, "monitor_every")) &&
      tsr_vint(v, "output.monitor_every", x->value, &every)) {
    if (every >= 1) c->output.monitor_every = (int)every;
    else tsr_vat(v, x->value, "output.monitor_every: must be >= 1, got %ld", every);
  }
  int mode;
  if ((x = tsr_yaml_find(o, "progress")) &&
      tsr_vchoice(v, "output.progress", x->value, modes, 4, &mode))
    c->output.progress = (tsr_progress_mode)mode;
  long n;
  if ((x = tsr_yaml_find(o, "checkpoint_every")))
    read_every(v, "output.checkpoint_every", x, &c->output.checkpoint_every);
  if ((x = tsr_yaml_find(o, "snapshot_every")))
    read_every(v, "output.snapshot_every", x, &c->output.snapshot_every);
  int prec;
  if ((x = tsr_yaml_find(o, "snapshot_precision")) &&
      tsr_vchoice(v, "output.snapshot_precision", x->value, precisions, 2, &prec))
    c->output.snapshot_single = prec == 1;
  int io;
  if ((x = tsr_yaml_find(o, "io")) && tsr_vchoice(v, "output.io", x->value, ios, 3, &io))
    c->output.io = io;
  int async;
  if ((x = tsr_yaml_find(o, "checkpoint_async")) &&
      tsr_vbool(v, "output.checkpoint_async", x->value, &async))
    c->output.checkpoint_async = async;
  if ((x = tsr_yaml_find(o, "keep")) && tsr_vint(v, "output.keep", x->value, &n)) {
    if (n >= 1 && n <= INT32_MAX) c->output.keep = (int)n;
    else tsr_vat(v, x->value, "output.keep: must be >= 1, got %ld", n);
  }
}

void tsr_case_read_comm(tsr_vctx *v, const tsr_yaml_entry *e) {
  static const char *const keys[] = {"timeout"};
  const tsr_yaml_node *o = e && tsr_vmap(v, "comm", e->value) ? e->value : NULL;
  if (o) tsr_vkeys(v, "comm", o, keys, 1);
  const tsr_yaml_entry *x;
  double d;
  if ((x = tsr_yaml_find(o, "timeout")) && tsr_vnumber(v, "comm.timeout", x->value, &d)) {
    /* under a second is below what a loaded machine's scheduler can promise */
    if (d >= 0.1 && d <= 1e7) v->c->comm.timeout = d;
    else tsr_vat(v, x->value, "comm.timeout: expected seconds in [0.1, 1e7], got %g", d);
  }
}

void tsr_case_read_gpu(tsr_vctx *v, const tsr_yaml_entry *e) {
  static const char *const keys[] = {"graphs"};
  const tsr_yaml_node *o = e && tsr_vmap(v, "gpu", e->value) ? e->value : NULL;
  if (o) tsr_vkeys(v, "gpu", o, keys, 1);
  const tsr_yaml_entry *x = tsr_yaml_find(o, "graphs");
  if (!x) return;
  /* on and off are YAML booleans: any spelling of one is taken, as tsr_vbool does */
  static const char *const on[] = {"on", "true", "yes"}, *const off[] = {"off", "false", "no"};
  const tsr_yaml_node *n = x->value;
  int mode = -1;
  if (n && n->kind == TSR_YAML_SCALAR && !n->quoted) {
    if (strcmp(n->text, "auto") == 0) mode = TSR_GRAPHS_AUTO;
    for (int i = 0; i < 3; ++i) {
      if (strcasecmp(n->text, on[i]) == 0) mode = TSR_GRAPHS_ON;
      if (strcasecmp(n->text, off[i]) == 0) mode = TSR_GRAPHS_OFF;
    }
  }
  if (mode >= 0) v->c->gpu.graphs = (tsr_graphs_mode)mode;
  else
    tsr_vat(v, n, "gpu.graphs: expected auto, on or off, got '%s'",
            n && n->kind == TSR_YAML_SCALAR ? n->text : "a list or map");
}

void tsr_case_read_rebalance(tsr_vctx *v, const tsr_yaml_entry *e) {
  static const char *const keys[] = {"every", "threshold", "window", "enabled", "reserve",
                                     "clock"};
  static const char *const clocks[] = {"wall", "cpu"};
  tsr_case *c = v->c;
  const tsr_yaml_node *o = e && tsr_vmap(v, "rebalance", e->value) ? e->value : NULL;
  if (o) tsr_vkeys(v, "rebalance", o, keys, 6);
  const tsr_yaml_entry *x;
  long n;
  if ((x = tsr_yaml_find(o, "every")) && tsr_vint(v, "rebalance.every", x->value, &n)) {
    if (n >= 1 && n <= INT32_MAX) c->rebalance.every = (int)n;
    else tsr_vat(v, x->value, "rebalance.every: must be >= 1 steps, got %ld", n);
  }
  double d;
  if ((x = tsr_yaml_find(o, "threshold")) &&
      tsr_vnumber(v, "rebalance.threshold", x->value, &d)) {
    if (d >= 0.0 && d <= 100.0) c->rebalance.threshold = d;
    else tsr_vat(v, x->value, "rebalance.threshold: expected an imbalance in [0, 100] (0.05 "
                 "acts when the slowest rank takes 5%% longer than the mean), got %g", d);
  }
  c->rebalance.window = c->rebalance.every;
  if ((x = tsr_yaml_find(o, "window")) && tsr_vint(v, "rebalance.window", x->value, &n)) {
    /* the figures of one decision must come from steps on one partition */
    if (n >= 1 && n <= c->rebalance.every) c->rebalance.window = (int)n;
    else tsr_vat(v, x->value, "rebalance.window: must be from 1 to rebalance.every (%d) steps, "
                 "got %ld", c->rebalance.every, n);
  }
  int on;
  if ((x = tsr_yaml_find(o, "enabled")) && tsr_vbool(v, "rebalance.enabled", x->value, &on))
    c->rebalance.enabled = on;
  if ((x = tsr_yaml_find(o, "reserve")) && tsr_vnumber(v, "rebalance.reserve", x->value, &d)) {
    if (d >= 0.0 && d <= 100.0) c->rebalance.reserve = d;
    else tsr_vat(v, x->value, "rebalance.reserve: expected a fraction in [0, 100] (0.5 keeps "
                 "room in every field for a box half as large again), got %g", d);
  }
  int k;
  if ((x = tsr_yaml_find(o, "clock")) &&
      tsr_vchoice(v, "rebalance.clock", x->value, clocks, 2, &k))
    c->rebalance.clock = (tsr_rebalance_clock)k;
}

/* debug.slowdown: {rank, factor, steps: [a, b]}, every key required. */
static void read_slowdown(tsr_vctx *v, const tsr_yaml_entry *e) {
  static const char *const keys[] = {"rank", "factor", "steps"};
  tsr_case *c = v->c;
  const tsr_yaml_node *o = e->value;
  if (!o || o->kind != TSR_YAML_MAP) {
    tsr_vat(v, o, "debug.slowdown: expected a map such as {rank: 1, factor: 2, steps: [10, "
            "200]}");
    return;
  }
  tsr_vkeys(v, "debug.slowdown", o, keys, 3);
  const tsr_yaml_entry *re = tsr_yaml_find(o, "rank"), *fe = tsr_yaml_find(o, "factor"),
                       *se = tsr_yaml_find(o, "steps");
  for (int i = 0; i < 3; ++i)
    if (!tsr_yaml_find(o, keys[i]))
      tsr_vkey(v, e, "debug.slowdown: missing '%s'; give rank, factor and steps: [a, b]",
               keys[i]);
  int ok = re && fe && se;
  long r = 0, a = 0, b = 0;
  double f = 1.0;
  if (re && tsr_vint(v, "debug.slowdown.rank", re->value, &r)) {
    if (r < 0 || r > INT32_MAX) ok = 0, tsr_vat(v, re->value, "debug.slowdown.rank: must be a "
                                                 "rank (>= 0), got %ld", r);
  } else {
    ok = 0;
  }
  if (fe && tsr_vnumber(v, "debug.slowdown.factor", fe->value, &f)) {
    if (!(f >= 1.0 && f <= 1000.0))
      ok = 0, tsr_vat(v, fe->value, "debug.slowdown.factor: expected a factor in [1, 1000] "
                      "(2: the rank's compute takes twice as long), got %g", f);
  } else {
    ok = 0;
  }
  const tsr_yaml_node *sn = se ? se->value : NULL;
  if (se && sn && sn->kind == TSR_YAML_SEQ && sn->n == 2) {
    if (!tsr_vint(v, "debug.slowdown.steps[0]", sn->items[0], &a) ||
        !tsr_vint(v, "debug.slowdown.steps[1]", sn->items[1], &b))
      ok = 0;
    else if (a < 1 || b < a)
      ok = 0, tsr_vat(v, sn, "debug.slowdown.steps: expected [a, b] with 1 <= a <= b, got "
                      "[%ld, %ld]", a, b);
  } else if (se) {
    ok = 0;
    tsr_vat(v, sn, "debug.slowdown.steps: expected [a, b], the first and last step slowed");
  }
  if (!ok) return;
  c->debug.slowdown = 1;
  c->debug.slowdown_rank = (int)r;
  c->debug.slowdown_factor = f;
  c->debug.slowdown_steps[0] = a;
  c->debug.slowdown_steps[1] = b;
  c->debug.slowdown_loc = (tsr_loc){re->value->file, re->value->line, re->value->col};
}

void tsr_case_read_debug(tsr_vctx *v, const tsr_yaml_entry *e) {
  static const char *const keys[] = {"slowdown"};
  const tsr_yaml_node *o = e && tsr_vmap(v, "debug", e->value) ? e->value : NULL;
  if (o) tsr_vkeys(v, "debug", o, keys, 1);
  const tsr_yaml_entry *x = tsr_yaml_find(o, "slowdown");
  if (x) read_slowdown(v, x);
}

tsr_err tsr_case_check_ranks(const tsr_case *c, int nranks) {
  if (!c->debug.slowdown || c->debug.slowdown_rank < nranks) return TSR_OK;
  char at[256];
  tsr_case_loc_str(&c->debug.slowdown_loc, at, sizeof at);
  return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                     "%s: debug.slowdown.rank: rank %d, but the run has %d rank%s (0 to %d); "
                     "give one of them", at, c->debug.slowdown_rank, nranks,
                     nranks == 1 ? "" : "s", nranks - 1);
}
