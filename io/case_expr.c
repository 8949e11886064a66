#include "io/case_expr.h"
#include "io/case_validate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

tsr_expr_env tsr_case_env(const tsr_case *c) {
  return (tsr_expr_env){c->nparam, (const char *const *)c->param_name, c->param_value};
}

tsr_err tsr_case_compile(const tsr_case *c, const tsr_case_expr *e, tsr_expr **out) {
  *out = NULL;
  tsr_expr_env env = tsr_case_env(c);
  int col = 0;
  tsr_err err = tsr_expr_compile(e->text, &env, out, &col);
  if (!err) return TSR_OK;
  if (err != TSR_ERR_INPUT) return err;
  if (col < 0) col = 0; /* a problem with the params, not with a character of the text */
  char msg[2048];
  snprintf(msg, sizeof msg, "%s", tsr_err_message());
  if (e->loc.line > 0)
    return tsr_err_set(err, __FILE__, __LINE__, "%s:%d:%d: %s: %s", e->loc.file, e->loc.line,
                       e->loc.col + col, e->key, msg);
  return tsr_err_set(err, __FILE__, __LINE__, "%s: %s: %s (at column %d of \"%s\")",
                     e->loc.file ? e->loc.file : "?", e->key, msg, col + 1, e->text);
}

tsr_err tsr_case_nonfinite(const tsr_case *c, const tsr_case_expr *e, double v,
                           const double xyz[3], int timed, double t) {
  char at[160] = "", where[600];
  int w = 0;
  for (int d = 0; d < c->dim && w < (int)sizeof at; ++d)
    w += snprintf(at + w, sizeof at - (size_t)w, "%s%c = %.9g", d ? ", " : "", "xyz"[d], xyz[d]);
  if (timed && w < (int)sizeof at) snprintf(at + w, sizeof at - (size_t)w, ", t = %.9g", t);
  if (e->loc.line > 0) snprintf(where, sizeof where, "%s:%d:%d", e->loc.file, e->loc.line,
                                e->loc.col);
  else if (e->loc.file) snprintf(where, sizeof where, "--set %s", e->loc.file);
  else snprintf(where, sizeof where, "%s", c->path);
  return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                     "%s: %s: \"%.200s\" is %s at %s: it must be finite at every point of the "
                     "grid%s; check %s and the params it uses",
                     where, e->key, e->text, isnan(v) ? "nan" : v > 0 ? "inf" : "-inf", at,
                     timed ? " and time" : "", e->key);
}

/* Appends (or sets, for the first) one problem line. */
static void report(int *n, const char *line) {
  if ((*n)++ == 0) tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "%s", line);
  else tsr_err_append("%s", line);
}

tsr_err tsr_case_check_expressions(const tsr_case *c) {
  const tsr_case_expr *all[3 * TSR_MAX_COMP + TSR_NFACE * TSR_MAX_COMP];
  int n = 0;
  for (int q = 0; q < c->ncomp; ++q) {
    all[n++] = &c->initial[q];
    all[n++] = &c->source[q];
    all[n++] = &c->exact[q];
  }
  for (int f = 0; f < 2 * c->dim; ++f)
    if (c->bc[f].type != TSR_BC_PERIODIC)
      for (int q = 0; q < c->ncomp; ++q) all[n++] = &c->bc[f].value[q];
  int problems = 0;
  char line[4096];
  int used[TSR_MAX_PARAMS] = {0};
  for (int i = 0; i < n; ++i) {
    if (!all[i]->text) continue;
    tsr_expr *e = NULL;
    tsr_err err = tsr_case_compile(c, all[i], &e);
    if (err == TSR_ERR_INPUT) {
      snprintf(line, sizeof line, "%s", tsr_err_message());
      report(&problems, line);
      continue;
    }
    if (err) return err;
    for (int p = 0; p < c->nparam; ++p) used[p] |= tsr_expr_uses(e, c->param_name[p]);
    tsr_expr_destroy(&e);
  }
  /* a param that neither the model nor any expression reads is almost always a typo */
  const tsr_model_info *m = &tsr_models[c->model];
  for (int p = m->nparam; p < c->nparam; ++p) {
    if (used[p]) continue;
    const char *names[TSR_MAX_MODEL_PARAMS];
    for (int k = 0; k < m->nparam; ++k) names[k] = m->param[k].name;
    const char *best = tsr_suggest(c->param_name[p], names, m->nparam);
    char hint[128] = "";
    if (best) snprintf(hint, sizeof hint, " (did you mean '%s'?)", best);
    snprintf(line, sizeof line,
             "%s:%d:%d: params.%s: not a parameter of model %s and not used by any "
             "expression%s; model parameters are:",
             c->param_loc[p].file ? c->param_loc[p].file : c->path, c->param_loc[p].line,
             c->param_loc[p].col, c->param_name[p], m->name, hint);
    for (int k = 0; k < m->nparam; ++k) {
      size_t w = strlen(line);
      snprintf(line + w, sizeof line - w, "%s %s", k ? "," : "", m->param[k].name);
    }
    report(&problems, line);
  }
  return problems ? TSR_ERR_INPUT : TSR_OK;
}
