/* Case keys of method: implicit (README, "Implicit method").
 *
 *   time:                    required
 *     scheme: bdf2           beuler | cn | bdf2 | ark_imex (PETSc TSBEULER, TSCN, TSBDF of
 *                            order 2, TSARKIMEX: the reaction explicit, diffusion implicit)
 *     dt: DT                 required; a number > 0 (there is no stability limit to take a
 *                            fraction of): the step, or the first step when adaptive
 *     end: T | steps: N      exactly one, as for the explicit method (with end, dt shrinks so
 *                            a whole number of steps lands on T)
 *     adaptive: false        true: PETSc's TS adaptivity chooses each step from dt on,
 *                            keeping the local error estimate within rtol/atol
 *     rtol: 1e-4, atol: 1e-6 in [1e-14, 1) and [1e-100, 1); with adaptive: true only
 *   petsc: {OPTION: VALUE}   optional; PETSc options, the name without or with its dash
 *                            (ksp_type: cg, -pc_type: gamg, ksp_rtol: 1e-8); a value is a
 *                            scalar, or empty/null for an option that takes none
 *                            (ksp_monitor:). Checked by PETSc itself when the run starts: an
 *                            option that no solver object reads is refused with its position.
 *                            The TS options of the time plan (-ts_dt, -ts_max_time, ...:
 *                            tsr_case_petsc_owned) are refused: time: sets them.
 *                            Options on the command line after the case win over these.
 *
 * Not with method implicit: time.cfl and dt: auto, precision: single (PETSc's scalars are
 * double), backend: cuda (Debian's PETSc is host-only), the rebalance:, debug: and gpu:
 * sections, models without a pointwise Jacobian (tsr_models[].methods). With time.adaptive,
 * output.*_every: {time: T} writes after the step that crosses each multiple of T. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/case_validate.h"

static const char *const schemes[] = {"beuler", "cn", "bdf2", "ark_imex"};

void tsr_case_read_implicit_time(tsr_vctx *v, const tsr_yaml_node *root, const tsr_yaml_entry *e) {
  static const char *const keys[] = {"scheme", "dt", "end", "steps", "adaptive", "rtol", "atol",
                                     "cfl", "fuse"};
  tsr_case *c = v->c;
  c->implicit.scheme = TSR_ISCHEME_BDF2;
  c->implicit.rtol = 1e-4;
  c->implicit.atol = 1e-6;
  c->time.dt_auto = 0;
  if (!e) {
    tsr_vat(v, root, "time: missing; method implicit needs a step and an end, e.g. time: "
            "{scheme: bdf2, dt: 1e-3, end: 0.1}");
    return;
  }
  if (!tsr_vmap(v, "time", e->value)) {
    if (tsr_yaml_is_null(e->value))
      tsr_vkey(v, e, "time: missing time.dt and time.end (or time.steps); e.g. dt: 1e-3, end: 0.1");
    return;
  }
  const tsr_yaml_node *t = e->value;
  tsr_vkeys(v, "time", t, keys, 9);
  const tsr_yaml_entry *x;
  if ((x = tsr_yaml_find(t, "cfl")))
    tsr_vkey(v, x, "time.cfl: a key of the explicit method (dt: auto); method implicit takes "
             "time.dt: remove it");
  if ((x = tsr_yaml_find(t, "fuse")))
    tsr_vkey(v, x, "time.fuse: a key of the explicit method (steps per halo exchange); method "
             "implicit exchanges halos inside PETSc's solves: remove it");
  const tsr_yaml_node *sn = (x = tsr_yaml_find(t, "scheme")) ? x->value : NULL;
  if (sn && sn->kind == TSR_YAML_SCALAR) {
    static const char *const explicit_names[] = {"euler", "forward_euler", "ssp_rk2", "rk2",
                                                 "ssp_rk3", "rk3", "rk4"};
    int expl = 0;
    for (int i = 0; i < 7; ++i) expl |= strcmp(sn->text, explicit_names[i]) == 0;
    int s;
    if (expl)
      tsr_vat(v, sn, "time.scheme: %s is an explicit scheme; method implicit takes beuler, cn, "
              "bdf2 or ark_imex", sn->text);
    else if (tsr_vchoice(v, "time.scheme", sn, schemes, 4, &s))
      c->implicit.scheme = (tsr_implicit_scheme)s;
  } else if (sn) {
    int s;
    tsr_vchoice(v, "time.scheme", sn, schemes, 4, &s); /* reports what it is not */
  }
  double d;
  if (!(x = tsr_yaml_find(t, "dt"))) {
    tsr_vkey(v, e, "time: missing time.dt; method implicit needs the step (the first step when "
             "adaptive), e.g. dt: 1e-3");
  } else if (x->value && x->value->kind == TSR_YAML_SCALAR && !x->value->quoted &&
             strcmp(x->value->text, "auto") == 0) {
    tsr_vat(v, x->value, "time.dt: auto takes a fraction of the explicit method's stability "
            "limit; method implicit has none: give a number, e.g. dt: 1e-3");
  } else if (tsr_vnumber(v, "time.dt", x->value, &d)) {
    if (d > 0.0) c->time.dt = d;
    else tsr_vat(v, x->value, "time.dt: must be > 0, got %g", d);
  }
  const tsr_yaml_entry *se = tsr_case_read_time_span(v, e);
  int b;
  if ((x = tsr_yaml_find(t, "adaptive")) && tsr_vbool(v, "time.adaptive", x->value, &b))
    c->implicit.adaptive = b;
  if (c->implicit.adaptive && se)
    tsr_vkey(v, se, "time.steps: an adaptive run takes as many steps as its tolerances need; "
             "give time.end instead");
  static const char *const tols[] = {"rtol", "atol"};
  double *dst[] = {&c->implicit.rtol, &c->implicit.atol};
  /* the smallest tolerances a double run resolves: a relative error below 1e-14 (about 50
   * roundings of 2.2e-16) is rounding, not truncation; PETSc's error norm sums the squares of
   * error / atol, which overflow past 1e154 (1e-300 stopped the run with PETSc's "Infinite or
   * not-a-number generated in normr", exit 1) */
  static const double least[] = {1e-14, 1e-100};
  static const char *const why[] = {
      "the error estimate cannot resolve a relative error below 50 roundings of double",
      "PETSc's error norm squares error/atol, which overflows for smaller ones"};
  for (int i = 0; i < 2; ++i) {
    if (!(x = tsr_yaml_find(t, tols[i]))) continue;
    char key[32];
    snprintf(key, sizeof key, "time.%s", tols[i]);
    if (!c->implicit.adaptive)
      tsr_vkey(v, x, "%s: a tolerance of the adaptive step; add time.adaptive: true or remove "
               "it", key);
    else if (tsr_vnumber(v, key, x->value, &d)) {
      if (d >= least[i] && d < 1.0) *dst[i] = d;
      else if (d > 0.0 && d < least[i])
        tsr_vat(v, x->value, "%s: expected a tolerance in [%g, 1), got %g: %s", key, least[i], d,
                why[i]);
      else tsr_vat(v, x->value, "%s: expected a tolerance in [%g, 1), got %g", key, least[i], d);
    }
  }
}

/* An option name as PETSc spells it after the dash: a letter, then letters, digits and _. */
static int option_name_ok(const char *s) {
  if (!isalpha((unsigned char)s[0])) return 0;
  for (; *s; ++s)
    if (!isalnum((unsigned char)*s) && *s != '_') return 0;
  return 1;
}

const char *tsr_case_petsc_owned(const char *name, const char *value, int adaptive) {
  static const char *const owned[][2] = {
      {"ts_dt", "time.dt sets the step (the first step with time.adaptive)"},
      {"ts_max_time", "time.end sets where the run ends"},
      {"ts_final_time", "time.end sets where the run ends"},
      {"ts_max_steps", "time.end or time.steps sets how many steps the run takes"},
      {"ts_init_time", "a run starts at t = 0, a restart at its checkpoint's time"},
      {"ts_exact_final_time", "the steps land on time.end (whole steps of time.dt, or the "
                              "adaptive step matched to it)"},
      {"ts_time_span", "output.snapshot_every sets the times of the output"},
      {"ts_rtol", "time.rtol sets the adaptive step's relative tolerance"},
      {"ts_atol", "time.atol sets the adaptive step's absolute tolerance"}};
  for (size_t i = 0; i < sizeof owned / sizeof *owned; ++i)
    if (strcmp(name, owned[i][0]) == 0) return owned[i][1];
  if (strcmp(name, "ts_adapt_type") == 0) {
    const int none = value && strcmp(value, "none") == 0;
    if (!adaptive && !none)
      return "time.adaptive: true turns PETSc's adaptive step on (with time.rtol and time.atol); "
             "without it the steps are time.dt's";
    if (adaptive && none) return "time.adaptive: false (or no time.adaptive) takes fixed steps";
  }
  return NULL;
}

static void read_options(tsr_vctx *v, const tsr_yaml_entry *e) {
  tsr_case *c = v->c;
  /* a null is an empty section; anything else but a map is reported by tsr_vmap */
  const tsr_yaml_node *o = tsr_vmap(v, "petsc", e->value) ? e->value : NULL;
  if (!o) return;
  c->implicit.opt_name = calloc((size_t)o->n + 1, sizeof(char *));
  c->implicit.opt_value = calloc((size_t)o->n + 1, sizeof(char *));
  c->implicit.opt_loc = calloc((size_t)o->n + 1, sizeof(tsr_loc));
  if (!c->implicit.opt_name || !c->implicit.opt_value || !c->implicit.opt_loc) {
    v->oom = 1;
    return;
  }
  for (int i = 0; i < o->n; ++i) {
    const tsr_yaml_entry *x = &o->entries[i];
    const char *name = x->key[0] == '-' ? x->key + 1 : x->key;
    const tsr_yaml_node *val = x->value;
    if (!option_name_ok(name)) {
      tsr_vkey(v, x, "petsc.%s: not a PETSc option name (a letter, then letters, digits and _, "
               "as in ksp_type or -pc_gamg_threshold)", x->key);
      continue;
    }
    if (val && val->kind != TSR_YAML_SCALAR) {
      tsr_vat(v, val, "petsc.%s: expected one value (a word or a number) or nothing, got a %s; "
              "PETSc options are flat: write pc_gamg_threshold: 0.02, not nested maps",
              x->key, val->kind == TSR_YAML_MAP ? "map" : "list");
      continue;
    }
    for (int j = 0; j < c->implicit.nopt; ++j)
      if (strcmp(c->implicit.opt_name[j], name) == 0) {
        tsr_vkey(v, x, "petsc.%s: given twice (with and without its dash); keep one", x->key);
        name = NULL;
        break;
      }
    if (!name) continue;
    const char *use = tsr_case_petsc_owned(name, val && !tsr_yaml_is_null(val) ? val->text : NULL,
                                           c->implicit.adaptive);
    if (use) {
      tsr_vkey(v, x, "petsc.%s: tessera sets this from the case: %s; remove the option and "
               "use the key", x->key, use);
      continue;
    }
    int k = c->implicit.nopt;
    c->implicit.opt_name[k] = tsr_vstrdup(v, name);
    c->implicit.opt_value[k] = val && !tsr_yaml_is_null(val) ? tsr_vstrdup(v, val->text) : NULL;
    c->implicit.opt_loc[k] = (tsr_loc){x->file, x->line, x->col};
    if (!c->implicit.opt_name[k]) return;
    c->implicit.nopt = k + 1;
  }
}

/* The sections and keys another method owns, the models, precision and backend, against
 * method: implicit. */
static void check_method_keys(tsr_vctx *v, const tsr_yaml_node *root) {
  tsr_case *c = v->c;
  const tsr_model_info *m = c->ncomp ? &tsr_models[c->model] : NULL;
  const tsr_yaml_entry *x;
  if (m && !(m->methods & TSR_METHODS_IMPLICIT)) {
    x = tsr_yaml_find(root, "model");
    tsr_vat(v, x ? x->value : root, "model: %s has no implicit form in this version (method "
            "implicit takes heat, advection_diffusion, allen_cahn, gray_scott); use method: %s",
            m->name, m->methods & TSR_METHODS_EXPLICIT ? "explicit" : "pinn");
  }
  if ((x = tsr_yaml_find(root, "precision")) && c->precision == TSR_PRECISION_SINGLE)
    tsr_vat(v, x->value, "precision: single: method implicit solves in double (PETSc's "
            "scalars); remove the key or say double");
  if ((x = tsr_yaml_find(root, "backend")) && c->backend == TSR_BACKEND_CUDA)
    tsr_vat(v, x->value, "backend: cuda: method implicit solves on CPU ranks: the PETSc it is "
            "built with (Debian's petsc-dev) has no GPU vectors or matrices; use backend: host "
            "or auto (auto runs it on the CPU cores), or method: explicit on the GPUs");
  static const char *const explicit_only[] = {"rebalance", "debug", "gpu"};
  for (int i = 0; i < 3; ++i)
    if ((x = tsr_yaml_find(root, explicit_only[i])))
      tsr_vkey(v, x, "%s: a section of the explicit method; method implicit has no %s: remove "
               "it", explicit_only[i], explicit_only[i]);
}

void tsr_case_read_implicit(tsr_vctx *v, const tsr_yaml_node *root, const tsr_yaml_entry *e) {
  tsr_case *c = v->c;
  if (c->method != TSR_METHOD_IMPLICIT) {
    if (e)
      tsr_vkey(v, e, "petsc: PETSc's options, for method implicit, and this case's method is "
               "%s; add method: implicit or remove the section",
               c->method == TSR_METHOD_PINN ? "pinn" : "explicit");
    return;
  }
  check_method_keys(v, root);
  if (e) read_options(v, e);
}
