/* Case keys of parallel in time (README, "Parallel in time: parareal").
 *
 *   decomposition:
 *     time_slices: P           P > 1 with method explicit: parareal over P time slices
 *   parareal:                  optional; only with method explicit and time_slices > 1
 *     coarsen: 2               the coarse propagator's grid: grid.cells / coarsen on every axis
 *                              (1: the fine grid), integer 1..16 that divides every axis
 *     coarse_scheme: SCHEME    a time.scheme name; default the fine propagator's scheme
 *     coarse_cfl: 0.9          the coarse step: coarse_cfl x the coarse grid's stability
 *                              limit, in (0, 1]
 *     coarse_dt: DT            or the coarse step itself (> 0, within the coarse grid's
 *                              stability limit: checked when the run starts); not both
 *     tol: 1.0e-6              > 0: the iterations stop once no slice-end state changed by
 *                              tol or more, as max |U_k - U_(k-1)| / max |U_k| over cells and
 *                              components
 *     max_iterations: P        1..P (after P iterations the run is the serial one, bit for bit)
 *     slices_per_rank: 1       slices each rank runs in turn (ranks = space ranks x P / this);
 *                              divides P
 *
 * With parareal output.checkpoint_every: N counts iterations (solver/parareal/state.c); not
 * with parareal: checkpoint_every {time: T}, the rebalance: and debug: sections. */
#include <stdio.h>
#include <string.h>

#include "io/case_validate.h"

static int int_key(tsr_vctx *v, const tsr_yaml_node *o, const char *name, long lo, long hi,
                   long *out) {
  const tsr_yaml_entry *x = tsr_yaml_find(o, name);
  char key[64];
  snprintf(key, sizeof key, "parareal.%s", name);
  if (!x || !tsr_vint(v, key, x->value, out)) return 0;
  if (*out >= lo && *out <= hi) return 1;
  tsr_vat(v, x->value, "%s: must be in %ld..%ld, got %ld", key, lo, hi, *out);
  return 0;
}

static void refuse_sections(tsr_vctx *v, const tsr_yaml_node *root) {
  const tsr_yaml_entry *oe = tsr_yaml_find(root, "output");
  const tsr_yaml_node *on = oe && oe->value && oe->value->kind == TSR_YAML_MAP ? oe->value : NULL;
  const tsr_yaml_entry *x = tsr_yaml_find(on, "checkpoint_every");
  if (x && v->c->output.checkpoint_every.time > 0.0)
    tsr_vkey(v, x, "output.checkpoint_every: a parareal run (decomposition.time_slices > 1) "
             "checkpoints after every N iterations; give checkpoint_every: N, not {time: T}");
  const tsr_yaml_entry *te = tsr_yaml_find(root, "time");
  x = te && te->value && te->value->kind == TSR_YAML_MAP ? tsr_yaml_find(te->value, "fuse") : NULL;
  if (x && v->c->time.fuse != 1)
    tsr_vkey(v, x, "time.fuse: not with parareal (decomposition.time_slices > 1) in this "
             "version; give 1 or remove it");
  static const char *const none[] = {"rebalance", "debug"};
  for (int i = 0; i < 2; ++i)
    if ((x = tsr_yaml_find(root, none[i])))
      tsr_vkey(v, x, "%s: not with parareal (decomposition.time_slices > 1) in this version; "
               "remove the section", none[i]);
}

void tsr_case_read_parareal(tsr_vctx *v, const tsr_yaml_node *root, const tsr_yaml_entry *e) {
  static const char *const keys[] = {"coarsen", "coarse_scheme", "coarse_cfl", "coarse_dt", "tol",
                                     "max_iterations", "slices_per_rank"};
  tsr_case *c = v->c;
  const int on = c->method == TSR_METHOD_EXPLICIT && c->decomp.time_slices > 1;
  if (!on) {
    if (e)
      tsr_vkey(v, e, "parareal: used only with method explicit and decomposition.time_slices > "
               "1; give time_slices: P (P > 1) or remove the section");
    return;
  }
  c->parareal.coarsen = 2;
  c->parareal.coarse_scheme = c->time.scheme;
  c->parareal.coarse_cfl = 0.9;
  c->parareal.tol = 1e-6;
  c->parareal.max_iterations = c->decomp.time_slices;
  c->parareal.slices_per_rank = 1;
  refuse_sections(v, root);
  const tsr_yaml_node *o = e && tsr_vmap(v, "parareal", e->value) ? e->value : NULL;
  if (!o) return;
  tsr_vkeys(v, "parareal", o, keys, 7);
  long n;
  const tsr_yaml_entry *x;
  if (int_key(v, o, "coarsen", 1, 16, &n)) {
    c->parareal.coarsen = (int)n;
    for (int a = 0; a < c->dim; ++a)
      if (c->cells[a] % n) {
        x = tsr_yaml_find(o, "coarsen");
        tsr_vat(v, x->value, "parareal.coarsen: %ld does not divide grid.cells[%d] = %d; choose "
                "a coarsening that divides every axis (or 1: the fine grid)", n, a, c->cells[a]);
        break;
      }
  }
  if ((x = tsr_yaml_find(o, "coarse_scheme")))
    tsr_case_read_scheme(v, "parareal.coarse_scheme", x->value, &c->parareal.coarse_scheme);
  double d;
  const tsr_yaml_entry *ce = tsr_yaml_find(o, "coarse_cfl"), *de = tsr_yaml_find(o, "coarse_dt");
  if (ce && de)
    tsr_vkey(v, de, "parareal.coarse_dt: give coarse_dt or coarse_cfl, not both");
  else if (ce && tsr_vnumber(v, "parareal.coarse_cfl", ce->value, &d)) {
    if (d > 0.0 && d <= 1.0) c->parareal.coarse_cfl = d;
    else tsr_vat(v, ce->value, "parareal.coarse_cfl: must be in (0, 1], got %g", d);
  } else if (de && tsr_vnumber(v, "parareal.coarse_dt", de->value, &d)) {
    if (d > 0.0) c->parareal.coarse_dt = d;
    else tsr_vat(v, de->value, "parareal.coarse_dt: must be > 0, got %g", d);
  }
  if ((x = tsr_yaml_find(o, "tol")) && tsr_vnumber(v, "parareal.tol", x->value, &d)) {
    if (d > 0.0) c->parareal.tol = d;
    else tsr_vat(v, x->value, "parareal.tol: must be > 0, got %g", d);
  }
  if (int_key(v, o, "max_iterations", 1, c->decomp.time_slices, &n))
    c->parareal.max_iterations = (int)n;
  if (int_key(v, o, "slices_per_rank", 1, c->decomp.time_slices, &n)) {
    if (c->decomp.time_slices % n) {
      x = tsr_yaml_find(o, "slices_per_rank");
      tsr_vat(v, x->value, "parareal.slices_per_rank: %ld does not divide "
              "decomposition.time_slices = %d; choose a divisor", n, c->decomp.time_slices);
    } else {
      c->parareal.slices_per_rank = (int)n;
    }
  }
}
