/* Case keys of method: pinn (README, "PINN method").
 *
 *   time:                    time-dependent models only (a steady one, poisson, has none)
 *     end: T                 required; the network is trained over [0, T]
 *     scheme, dt, cfl        the explicit method's: checked, unused (steps is refused)
 *   pinn:                    optional with method: pinn; with another method checked and
 *                            unused (one case file runs with either method)
 *     network:
 *       width: 64            units per hidden layer, 1..4096
 *       depth: 4             hidden layers, 1..64
 *       activation: tanh     tanh | sin
 *     points:
 *       interior: cells      cells: the grid's cell centres (times `times` levels in time);
 *                            N: N random points of the box (and of [0, end]), integer >= 1
 *       times: 32            time levels of `cells` (cell centres of [0, end]); time only
 *       resample_every: 0    with N points: new points every this many iterations; 0: never
 *       boundary: 256        points per boundary face (random over the face and [0, end])
 *       initial: 1024        points at t = 0 (random); time-dependent models only
 *       seed: 1              the points and the network's first weights come from it
 *       interface: cells     several ranks: points on the faces shared by neighbour boxes,
 *                            cells: the shared face cells' centres (times `times` levels);
 *                            N: N random points per shared face piece, integer >= 1
 *     weights: {pde: 1, boundary: 1, initial: 1}   loss weights, >= 0, not all three 0
 *       interface_value: 1   (u - (u + u_nb)/2)^2 at interface points (XPINN)
 *       interface_flux: 1    (n.grad u + n_nb.grad u_nb)^2 (cPINN)
 *       interface_residual: 1  (r - r_nb)^2 (XPINN)
 *     adam:
 *       iterations: 10000    integer >= 1
 *       lr: 1.0e-3           > 0
 *       decay: 0.9           in (0, 1]: lr * decay^(iteration / decay_every)
 *       decay_every: 1000    integer >= 1
 *     lbfgs:
 *       iterations: 0        L-BFGS iterations after Adam's (0: none), integer >= 0; on
 *                            several ranks each rank its own, with causal slabs each slab's
 *       history: 20          pairs kept, 1..100
 *     log_every: 100         iterations between progress lines and history rows
 *     slabs: all             decomposition.time_slices > 1: all (every slab trains at once,
 *                            its initial values the earlier slab's predictions, exchanged every
 *                            iteration) | causal (slab k trains after slab k-1, from its
 *                            trained values at the slab face and its weights) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "io/case_validate.h"

static void pinn_defaults(tsr_case *c) {
  c->pinn.width = 64;
  c->pinn.depth = 4;
  c->pinn.act = TSR_PINN_TANH;
  c->pinn.interior = 0;
  c->pinn.times = 32;
  c->pinn.boundary = 256;
  c->pinn.initial = 1024;
  c->pinn.seed = 1;
  c->pinn.w_pde = c->pinn.w_boundary = c->pinn.w_initial = 1.0;
  c->pinn.iface = 0;
  c->pinn.w_iface[0] = c->pinn.w_iface[1] = c->pinn.w_iface[2] = 1.0;
  c->pinn.iterations = 10000;
  c->pinn.lr = 1e-3;
  c->pinn.decay = 0.9;
  c->pinn.decay_every = 1000;
  c->pinn.lbfgs = 0;
  c->pinn.lbfgs_history = 20;
  c->pinn.log_every = 100;
}

static int int_in(tsr_vctx *v, const char *key, const tsr_yaml_entry *x, long lo, long hi,
                  long *out);

static void read_lbfgs(tsr_vctx *v, const tsr_yaml_entry *e) {
  static const char *const keys[] = {"iterations", "history"};
  tsr_case *c = v->c;
  const tsr_yaml_node *o = e && tsr_vmap(v, "pinn.lbfgs", e->value) ? e->value : NULL;
  if (!o) return;
  tsr_vkeys(v, "pinn.lbfgs", o, keys, 2);
  long n;
  if (int_in(v, "pinn.lbfgs.iterations", tsr_yaml_find(o, "iterations"), 0, INT32_MAX, &n))
    c->pinn.lbfgs = n;
  if (int_in(v, "pinn.lbfgs.history", tsr_yaml_find(o, "history"), 1, 100, &n))
    c->pinn.lbfgs_history = (int)n;
}

/* An integer in [lo, hi] at key; 1 and *out when it is. */
static int int_in(tsr_vctx *v, const char *key, const tsr_yaml_entry *x, long lo, long hi,
                  long *out) {
  long n;
  if (!x || !tsr_vint(v, key, x->value, &n)) return 0;
  if (n < lo || n > hi) {
    tsr_vat(v, x->value, "%s: must be an integer from %ld to %ld, got %ld", key, lo, hi, n);
    return 0;
  }
  *out = n;
  return 1;
}

static void read_network(tsr_vctx *v, const tsr_yaml_entry *e) {
  static const char *const keys[] = {"width", "depth", "activation"};
  static const char *const acts[] = {"tanh", "sin"};
  tsr_case *c = v->c;
  const tsr_yaml_node *o = e && tsr_vmap(v, "pinn.network", e->value) ? e->value : NULL;
  if (!o) return;
  tsr_vkeys(v, "pinn.network", o, keys, 3);
  long n;
  if (int_in(v, "pinn.network.width", tsr_yaml_find(o, "width"), 1, 4096, &n))
    c->pinn.width = (int)n;
  if (int_in(v, "pinn.network.depth", tsr_yaml_find(o, "depth"), 1, 64, &n))
    c->pinn.depth = (int)n;
  const tsr_yaml_entry *x = tsr_yaml_find(o, "activation");
  int a;
  if (x && tsr_vchoice(v, "pinn.network.activation", x->value, acts, 2, &a))
    c->pinn.act = a == 0 ? TSR_PINN_TANH : TSR_PINN_SIN;
}

static void read_points(tsr_vctx *v, const tsr_yaml_entry *e, int timed) {
  static const char *const keys[] = {"interior", "times", "resample_every", "boundary",
                                     "initial",  "seed",  "interface"};
  tsr_case *c = v->c;
  const tsr_yaml_node *o = e && tsr_vmap(v, "pinn.points", e->value) ? e->value : NULL;
  if (!o) return;
  tsr_vkeys(v, "pinn.points", o, keys, 7);
  const tsr_yaml_entry *x;
  long n;
  if ((x = tsr_yaml_find(o, "interior"))) {
    const tsr_yaml_node *iv = x->value;
    if (iv && iv->kind == TSR_YAML_SCALAR && strcmp(iv->text, "cells") == 0)
      c->pinn.interior = 0;
    else if (iv && iv->kind == TSR_YAML_SCALAR && tsr_vint(v, "pinn.points.interior", iv, &n) &&
             n >= 1 && n <= (1L << 31) - 1)
      c->pinn.interior = n;
    else if (!iv || iv->kind != TSR_YAML_SCALAR || strcmp(iv->text, "cells") != 0)
      tsr_vat(v, iv, "pinn.points.interior: expected cells (the grid's cell centres) or a "
              "number of random points from 1 to 2147483647");
  }
  if ((x = tsr_yaml_find(o, "times"))) {
    if (!timed)
      tsr_vkey(v, x, "pinn.points.times: model %s is steady: it has no time axis; remove the key",
               tsr_models[c->model].name);
    else if (int_in(v, "pinn.points.times", x, 1, 1 << 20, &n))
      c->pinn.times = (int)n;
  }
  if ((x = tsr_yaml_find(o, "resample_every")) &&
      int_in(v, "pinn.points.resample_every", x, 0, INT32_MAX, &n)) {
    if (n > 0 && c->pinn.interior == 0)
      tsr_vat(v, x->value, "pinn.points.resample_every: the cell centres (interior: cells) are "
              "never redrawn; give interior: N random points, or remove the key");
    c->pinn.resample_every = n;
  }
  if ((x = tsr_yaml_find(o, "boundary")) && int_in(v, "pinn.points.boundary", x, 0, 1L << 28, &n))
    c->pinn.boundary = n;
  if ((x = tsr_yaml_find(o, "initial"))) {
    if (!timed)
      tsr_vkey(v, x, "pinn.points.initial: model %s is steady: it has no initial condition; "
               "remove the key", tsr_models[c->model].name);
    else if (int_in(v, "pinn.points.initial", x, 1, 1L << 28, &n))
      c->pinn.initial = n;
  }
  if ((x = tsr_yaml_find(o, "seed")) && int_in(v, "pinn.points.seed", x, 0, INT64_MAX, &n))
    c->pinn.seed = (uint64_t)n;
  if ((x = tsr_yaml_find(o, "interface"))) {
    const tsr_yaml_node *iv = x->value;
    if (iv && iv->kind == TSR_YAML_SCALAR && strcmp(iv->text, "cells") == 0)
      c->pinn.iface = 0;
    else if (iv && iv->kind == TSR_YAML_SCALAR && tsr_vint(v, "pinn.points.interface", iv, &n) &&
             n >= 1 && n <= (1L << 28))
      c->pinn.iface = n;
    else if (!iv || iv->kind != TSR_YAML_SCALAR || strcmp(iv->text, "cells") != 0)
      tsr_vat(v, iv, "pinn.points.interface: expected cells (the centres of the face cells "
              "neighbour boxes share) or a number of random points per shared face from 1 to "
              "268435456");
  }
}

static void read_weights(tsr_vctx *v, const tsr_yaml_entry *e, int timed) {
  static const char *const keys[] = {"pde", "boundary", "initial", "interface_value",
                                     "interface_flux", "interface_residual"};
  tsr_case *c = v->c;
  const tsr_yaml_node *o = e && tsr_vmap(v, "pinn.weights", e->value) ? e->value : NULL;
  if (!o) return;
  tsr_vkeys(v, "pinn.weights", o, keys, 6);
  double *dst[6] = {&c->pinn.w_pde, &c->pinn.w_boundary, &c->pinn.w_initial,
                    &c->pinn.w_iface[0], &c->pinn.w_iface[1], &c->pinn.w_iface[2]};
  for (int i = 0; i < 6; ++i) {
    const tsr_yaml_entry *x = tsr_yaml_find(o, keys[i]);
    char key[64];
    snprintf(key, sizeof key, "pinn.weights.%s", keys[i]);
    double d;
    if (!x || !tsr_vnumber(v, key, x->value, &d)) continue;
    if (i == 2 && !timed)
      tsr_vkey(v, x, "%s: model %s is steady: it has no initial condition; remove the key", key,
               tsr_models[c->model].name);
    else if (!(d >= 0.0 && d <= 1e12))
      tsr_vat(v, x->value, "%s: expected a weight from 0 to 1e12, got %g", key, d);
    else
      *dst[i] = d;
  }
  /* the terms that tie the network to the problem (the interface terms only tie subdomains to
   * each other): all 0, the loss is 0 whatever the network computes, and a run trained on
   * nothing and ended with exit 0 */
  if (c->pinn.w_pde == 0.0 && c->pinn.w_boundary == 0.0 && (!timed || c->pinn.w_initial == 0.0))
    tsr_vat(v, o, "pinn.weights: %s 0: the loss is 0 whatever the network computes, and "
            "training would change nothing; give one of them a weight > 0",
            timed ? "pde, boundary and initial are all" : "pde and boundary (a steady model "
            "has no initial term) are both");
}

static void read_adam(tsr_vctx *v, const tsr_yaml_entry *e) {
  static const char *const keys[] = {"iterations", "lr", "decay", "decay_every"};
  tsr_case *c = v->c;
  const tsr_yaml_node *o = e && tsr_vmap(v, "pinn.adam", e->value) ? e->value : NULL;
  if (!o) return;
  tsr_vkeys(v, "pinn.adam", o, keys, 4);
  long n;
  if (int_in(v, "pinn.adam.iterations", tsr_yaml_find(o, "iterations"), 1, INT32_MAX, &n))
    c->pinn.iterations = n;
  if (int_in(v, "pinn.adam.decay_every", tsr_yaml_find(o, "decay_every"), 1, INT32_MAX, &n))
    c->pinn.decay_every = n;
  const tsr_yaml_entry *x;
  double d;
  if ((x = tsr_yaml_find(o, "lr")) && tsr_vnumber(v, "pinn.adam.lr", x->value, &d)) {
    if (d > 0.0 && d <= 10.0) c->pinn.lr = d;
    else tsr_vat(v, x->value, "pinn.adam.lr: expected a learning rate in (0, 10], got %g", d);
  }
  if ((x = tsr_yaml_find(o, "decay")) && tsr_vnumber(v, "pinn.adam.decay", x->value, &d)) {
    if (d > 0.0 && d <= 1.0) c->pinn.decay = d;
    else tsr_vat(v, x->value, "pinn.adam.decay: expected a factor in (0, 1] (1: constant lr), "
                 "got %g", d);
  }
}

void tsr_case_read_pinn_time(tsr_vctx *v, const tsr_yaml_node *root, const tsr_yaml_entry *e) {
  static const char *const keys[] = {"end", "scheme", "dt", "cfl", "steps", "fuse"};
  tsr_case *c = v->c;
  if (!c->ncomp) return; /* the model is unusable: already reported */
  if (tsr_models[c->model].steady) {
    if (e)
      tsr_vkey(v, e, "time: model %s is steady (no time axis); remove the time: section",
               tsr_models[c->model].name);
    return;
  }
  if (!e) {
    tsr_vat(v, root, "time: missing; method pinn trains over [0, end]: e.g. time: {end: 1.0}");
    return;
  }
  if (!tsr_vmap(v, "time", e->value)) {
    if (tsr_yaml_is_null(e->value)) tsr_vkey(v, e, "time: missing time.end; e.g. end: 1.0");
    return;
  }
  const tsr_yaml_node *t = e->value;
  tsr_vkeys(v, "time", t, keys, 6);
  /* scheme, dt, cfl and fuse are the explicit method's, checked so that the same case file runs
   * with either method (bench/pinn_vs_explicit.sh); steps would replace end, which the
   * network needs */
  tsr_case_read_time_scheme(v, t);
  const tsr_yaml_entry *x = tsr_yaml_find(t, "steps");
  if (x)
    tsr_vkey(v, x, "time.steps: the explicit method's step count; method pinn trains over [0, "
             "time.end]: give time.end instead");
  const tsr_yaml_entry *ee = tsr_yaml_find(t, "end");
  double d;
  if (!ee)
    tsr_vkey(v, e, "time: missing time.end; method pinn trains over [0, end]: e.g. end: 1.0");
  else if (tsr_vnumber(v, "time.end", ee->value, &d)) {
    if (d > 0.0) {
      c->time.has_end = 1;
      c->time.end = d;
    } else {
      tsr_vat(v, ee->value, "time.end: must be > 0, got %g", d);
    }
  }
}

/* The model and the sections another method owns, against method: pinn. */
static void check_method_keys(tsr_vctx *v, const tsr_yaml_node *root) {
  tsr_case *c = v->c;
  const tsr_model_info *m = c->ncomp ? &tsr_models[c->model] : NULL;
  const tsr_yaml_entry *me = tsr_yaml_find(root, "model");
  if (c->method == TSR_METHOD_PINN) {
    if (m && !(m->methods & TSR_METHODS_PINN))
      tsr_vat(v, me ? me->value : root, "model: %s has no PINN form in this version (method "
              "pinn takes heat, advection_diffusion, allen_cahn, burgers, poisson); use method: "
              "explicit", m->name);
    /* a PINN run's checkpoints count iterations and its snapshots sample simulated time */
    const tsr_yaml_entry *oe = tsr_yaml_find(root, "output");
    const tsr_yaml_node *on = oe && oe->value && oe->value->kind == TSR_YAML_MAP ? oe->value : NULL;
    const tsr_yaml_entry *ce = tsr_yaml_find(on, "checkpoint_every");
    const tsr_yaml_entry *se = tsr_yaml_find(on, "snapshot_every");
    if (ce && c->output.checkpoint_every.time > 0.0)
      tsr_vkey(v, ce, "output.checkpoint_every: method pinn checkpoints every N iterations; give "
               "a number of iterations (checkpoint_every: N), not {time: T}");
    if (se && c->output.snapshot_every.steps > 0)
      tsr_vkey(v, se, "output.snapshot_every: method pinn samples the network at times of the "
               "simulation; give {time: T}, not a number of steps");
    static const char *const explicit_only[] = {"rebalance", "debug"};
    for (int i = 0; i < 2; ++i) {
      const tsr_yaml_entry *x = tsr_yaml_find(root, explicit_only[i]);
      if (x)
        tsr_vkey(v, x, "%s: a section of the explicit method; method pinn has no %s: remove it",
                 explicit_only[i], explicit_only[i]);
    }
  } else if (c->method == TSR_METHOD_EXPLICIT && m && !(m->methods & TSR_METHODS_EXPLICIT)) {
    tsr_vat(v, me ? me->value : root, "model: %s is solved by method: pinn only in this version "
            "(%s); add method: pinn", m->name, m->steady ? "it is steady" : "no explicit scheme");
  }
}

void tsr_case_read_pinn(tsr_vctx *v, const tsr_yaml_node *root, const tsr_yaml_entry *e) {
  static const char *const keys[] = {"network", "points", "weights", "adam", "lbfgs",
                                     "log_every", "slabs"};
  static const char *const modes[] = {"all", "causal"};
  tsr_case *c = v->c;
  check_method_keys(v, root);
  /* with another method the section is checked (a typo shows at once) and unused, so that
   * one case file runs with method explicit and method pinn (bench/pinn_vs_explicit.sh) */
  if (c->method != TSR_METHOD_PINN && !e) return;
  pinn_defaults(c);
  int timed = !(c->ncomp && tsr_models[c->model].steady);
  const tsr_yaml_node *o = e && tsr_vmap(v, "pinn", e->value) ? e->value : NULL;
  if (!o) return;
  c->pinn.given = 1;
  tsr_vkeys(v, "pinn", o, keys, 7);
  read_network(v, tsr_yaml_find(o, "network"));
  read_points(v, tsr_yaml_find(o, "points"), timed);
  read_weights(v, tsr_yaml_find(o, "weights"), timed);
  read_adam(v, tsr_yaml_find(o, "adam"));
  read_lbfgs(v, tsr_yaml_find(o, "lbfgs"));
  long n;
  if (int_in(v, "pinn.log_every", tsr_yaml_find(o, "log_every"), 1, INT32_MAX, &n))
    c->pinn.log_every = n;
  const tsr_yaml_entry *se = tsr_yaml_find(o, "slabs");
  int mode = 0;
  if (se && c->decomp.time_slices < 2)
    tsr_vkey(v, se, "pinn.slabs: chooses how time slabs train, and decomposition.time_slices is "
             "1; give decomposition.time_slices > 1 or remove pinn.slabs");
  else if (se && tsr_vchoice(v, "pinn.slabs", se->value, modes, 2, &mode))
    c->pinn.causal = mode;
}
