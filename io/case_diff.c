/* Comparing two cases key by key (a checkpoint's and a restart's), and the case record that
 * checkpoints keep (io/case.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/case.h"

#define NONE "(none)"

static const char *const scheme_names[] = {"euler", "ssp_rk2", "ssp_rk3", "rk4"};
static const char *const bc_names[] = {"dirichlet", "neumann", "periodic"};

typedef struct {
  tsr_case_changes *out;
  int cap;
  int oom;
} differ;

static char *dup_or_oom(differ *d, const char *s) {
  char *p = strdup(s);
  if (!p) d->oom = 1;
  return p;
}

/* Records key (printf format) when a and b differ. */
static void cmp(differ *d, int fatal, const char *a, const char *b, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void cmp(differ *d, int fatal, const char *a, const char *b, const char *fmt, ...) {
  if (strcmp(a, b) == 0 || d->oom) return;
  tsr_case_changes *o = d->out;
  if (o->n == d->cap) {
    int cap = d->cap ? 2 * d->cap : 16;
    tsr_case_change *p = realloc(o->item, (size_t)cap * sizeof *p);
    if (!p) {
      d->oom = 1;
      return;
    }
    o->item = p;
    d->cap = cap;
  }
  char key[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(key, sizeof key, fmt, ap);
  va_end(ap);
  tsr_case_change *c = &o->item[o->n++];
  int stop = !strcmp(key, "time.end") || !strcmp(key, "time.steps");
  *c = (tsr_case_change){dup_or_oom(d, key), dup_or_oom(d, a), dup_or_oom(d, b), fatal, stop};
  o->nfatal += fatal;
  o->nstop += stop;
}

/* The shortest text that reads back as v. */
static void num(char *buf, size_t n, double v) {
  for (int p = 1; p <= 17; ++p) {
    snprintf(buf, n, "%.*g", p, v);
    if (strtod(buf, NULL) == v) return;
  }
}

/* "[a, b(, c)]" of dim numbers, integers (ints != NULL) or doubles. */
static void list(char *buf, size_t n, int dim, const int *ints, const double *dbl,
                 const int *bools) {
  size_t w = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < dim && w < n; ++i) {
    char one[32];
    if (ints) snprintf(one, sizeof one, "%d", ints[i]);
    else if (bools) snprintf(one, sizeof one, "%s", bools[i] ? "true" : "false");
    else num(one, sizeof one, dbl[i]);
    w += (size_t)snprintf(buf + w, n - w, "%s%s", i ? ", " : "", one);
  }
  if (w < n) snprintf(buf + w, n - w, "]");
}

/* An expression as shown: quoted, or (none). */
static void expr(char *buf, size_t n, const tsr_case_expr *e) {
  if (e->text) snprintf(buf, n, "\"%s\"", e->text);
  else snprintf(buf, n, NONE);
}

static int comp_of(const tsr_case *c, const char *name) {
  for (int q = 0; q < c->ncomp; ++q)
    if (strcmp(tsr_models[c->model].comp[q], name) == 0) return q;
  return -1;
}

/* section.<comp> for every component either model has. */
static void cmp_exprs(differ *d, const char *section, const tsr_case *a, const tsr_case_expr *ea,
                      const tsr_case *b, const tsr_case_expr *eb) {
  const tsr_case *side[2] = {a, b};
  for (int s = 0; s < 2; ++s)
    for (int q = 0; q < side[s]->ncomp; ++q) {
      const char *name = tsr_models[side[s]->model].comp[q];
      if (s == 1 && comp_of(a, name) >= 0) continue; /* done from a's side */
      int qa = comp_of(a, name), qb = comp_of(b, name);
      char va[2048], vb[2048];
      static const tsr_case_expr empty = {0};
      expr(va, sizeof va, qa >= 0 ? &ea[qa] : &empty);
      expr(vb, sizeof vb, qb >= 0 ? &eb[qb] : &empty);
      cmp(d, 0, va, vb, "%s.%s", section, name);
    }
}

static void cmp_params(differ *d, const tsr_case *a, const tsr_case *b) {
  const tsr_case *side[2] = {a, b};
  for (int s = 0; s < 2; ++s)
    for (int i = 0; i < side[s]->nparam; ++i) {
      const char *name = side[s]->param_name[i];
      int ia = -1, ib = -1;
      for (int k = 0; k < a->nparam; ++k)
        if (strcmp(a->param_name[k], name) == 0) ia = k;
      for (int k = 0; k < b->nparam; ++k)
        if (strcmp(b->param_name[k], name) == 0) ib = k;
      if (s == 1 && ia >= 0) continue;
      char va[64] = NONE, vb[64] = NONE;
      if (ia >= 0) num(va, sizeof va, a->param_value[ia]);
      if (ib >= 0) num(vb, sizeof vb, b->param_value[ib]);
      cmp(d, 0, va, vb, "params.%s", name);
    }
}

static void cmp_boundary(differ *d, const tsr_case *a, const tsr_case *b) {
  int dim = a->dim > b->dim ? a->dim : b->dim;
  for (int f = 0; f < 2 * dim; ++f) {
    const char *face = tsr_case_face_names[f];
    int ha = f < 2 * a->dim, hb = f < 2 * b->dim;
    cmp(d, 0, ha ? bc_names[a->bc[f].type] : NONE, hb ? bc_names[b->bc[f].type] : NONE,
        "boundary.%s.type", face);
    if (!ha || !hb || a->bc[f].type == TSR_BC_PERIODIC || b->bc[f].type == TSR_BC_PERIODIC)
      continue;
    char key[64];
    snprintf(key, sizeof key, "boundary.%s.value", face);
    cmp_exprs(d, key, a, a->bc[f].value, b, b->bc[f].value);
  }
}

static void cmp_time(differ *d, const tsr_case *a, const tsr_case *b) {
  char va[64], vb[64];
  cmp(d, 0, scheme_names[a->time.scheme], scheme_names[b->time.scheme], "time.scheme");
  if (a->time.dt_auto) snprintf(va, sizeof va, "auto");
  else num(va, sizeof va, a->time.dt);
  if (b->time.dt_auto) snprintf(vb, sizeof vb, "auto");
  else num(vb, sizeof vb, b->time.dt);
  cmp(d, 0, va, vb, "time.dt");
  num(va, sizeof va, a->time.cfl);
  num(vb, sizeof vb, b->time.cfl);
  cmp(d, 0, va, vb, "time.cfl");
  snprintf(va, sizeof va, NONE);
  snprintf(vb, sizeof vb, NONE);
  if (a->time.has_end) num(va, sizeof va, a->time.end);
  if (b->time.has_end) num(vb, sizeof vb, b->time.end);
  cmp(d, 0, va, vb, "time.end");
  snprintf(va, sizeof va, NONE);
  snprintf(vb, sizeof vb, NONE);
  if (a->time.has_steps) snprintf(va, sizeof va, "%ld", a->time.steps);
  if (b->time.has_steps) snprintf(vb, sizeof vb, "%ld", b->time.steps);
  cmp(d, 0, va, vb, "time.steps");
}

/* The pinn: keys that decide the network a checkpoint holds and where its training goes,
 * when both are method pinn: not pinn.adam.iterations, pinn.lbfgs.iterations or
 * pinn.log_every (where training stops, how often it logs: a restart may change them). Other
 * methods' pinn: sections are checked and unused, so they do not count. */
static void cmp_pinn(differ *d, const tsr_case *a, const tsr_case *b) {
  if (a->method != TSR_METHOD_PINN || b->method != TSR_METHOD_PINN) return;
  const tsr_case *side[2] = {a, b};
  char v[2][64];
#define PINN_INT(key, field)                                                                  \
  do {                                                                                        \
    for (int s = 0; s < 2; ++s) snprintf(v[s], sizeof v[s], "%lld", (long long)side[s]->field); \
    cmp(d, 0, v[0], v[1], key);                                                               \
  } while (0)
#define PINN_NUM(key, field)                                                                  \
  do {                                                                                        \
    for (int s = 0; s < 2; ++s) num(v[s], sizeof v[s], side[s]->field);                      \
    cmp(d, 0, v[0], v[1], key);                                                               \
  } while (0)
  PINN_INT("pinn.network.width", pinn.width);
  PINN_INT("pinn.network.depth", pinn.depth);
  static const char *const act[] = {"tanh", "sin", "?"}, *const slabs[] = {"all", "causal"};
  cmp(d, 0, act[a->pinn.act <= 1 ? a->pinn.act : 2], act[b->pinn.act <= 1 ? b->pinn.act : 2],
      "pinn.network.activation");
  PINN_INT("pinn.points.interior (0: cells)", pinn.interior);
  PINN_INT("pinn.points.times", pinn.times);
  PINN_INT("pinn.points.resample_every", pinn.resample_every);
  PINN_INT("pinn.points.boundary", pinn.boundary);
  PINN_INT("pinn.points.initial", pinn.initial);
  PINN_INT("pinn.points.seed", pinn.seed);
  PINN_INT("pinn.points.interface (0: cells)", pinn.iface);
  PINN_NUM("pinn.weights.pde", pinn.w_pde);
  PINN_NUM("pinn.weights.boundary", pinn.w_boundary);
  PINN_NUM("pinn.weights.initial", pinn.w_initial);
  PINN_NUM("pinn.weights.interface_value", pinn.w_iface[0]);
  PINN_NUM("pinn.weights.interface_flux", pinn.w_iface[1]);
  PINN_NUM("pinn.weights.interface_residual", pinn.w_iface[2]);
  PINN_NUM("pinn.adam.lr", pinn.lr);
  PINN_NUM("pinn.adam.decay", pinn.decay);
  PINN_INT("pinn.adam.decay_every", pinn.decay_every);
  PINN_INT("pinn.lbfgs.history", pinn.lbfgs_history);
  cmp(d, 0, slabs[a->pinn.causal != 0], slabs[b->pinn.causal != 0], "pinn.slabs");
#undef PINN_INT
#undef PINN_NUM
}

tsr_err tsr_case_diff(const tsr_case *a, const tsr_case *b, tsr_case_changes *out) {
  memset(out, 0, sizeof *out);
  differ d = {out, 0, 0};
  cmp(&d, 1, tsr_models[a->model].name, tsr_models[b->model].name, "model");
  static const char *const methods[] = {"explicit", "implicit", "pinn", "?"};
  cmp(&d, 0, methods[a->method <= 2 ? a->method : 3], methods[b->method <= 2 ? b->method : 3],
      "method");
  /* a double checkpoint continues a single run (rounded once) and back, when forced */
  cmp(&d, 0, a->precision == TSR_PRECISION_SINGLE ? "single" : "double",
      b->precision == TSR_PRECISION_SINGLE ? "single" : "double", "precision");
  char va[256], vb[256];
  list(va, sizeof va, a->dim, a->cells, NULL, NULL);
  list(vb, sizeof vb, b->dim, b->cells, NULL, NULL);
  cmp(&d, 1, va, vb, "grid.cells");
  list(va, sizeof va, a->dim, NULL, a->lo, NULL);
  list(vb, sizeof vb, b->dim, NULL, b->lo, NULL);
  cmp(&d, 0, va, vb, "grid.lo");
  list(va, sizeof va, a->dim, NULL, a->hi, NULL);
  list(vb, sizeof vb, b->dim, NULL, b->hi, NULL);
  cmp(&d, 0, va, vb, "grid.hi");
  list(va, sizeof va, a->dim, NULL, NULL, a->periodic);
  list(vb, sizeof vb, b->dim, NULL, NULL, b->periodic);
  cmp(&d, 0, va, vb, "grid.periodic");
  cmp_params(&d, a, b);
  cmp_exprs(&d, "initial", a, a->initial, b, b->initial);
  cmp_exprs(&d, "source", a, a->source, b, b->source);
  cmp_exprs(&d, "exact", a, a->exact, b, b->exact);
  cmp_boundary(&d, a, b);
  cmp_time(&d, a, b);
  cmp_pinn(&d, a, b);
  if (d.oom) {
    tsr_case_changes_free(out);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory comparing cases");
  }
  return TSR_OK;
}

void tsr_case_changes_free(tsr_case_changes *d) {
  if (!d) return;
  for (int i = 0; i < d->n; ++i) {
    free(d->item[i].key);
    free(d->item[i].a);
    free(d->item[i].b);
  }
  free(d->item);
  memset(d, 0, sizeof *d);
}

void tsr_case_changes_append(const tsr_case_changes *d, const char *a_name, const char *b_name,
                             int max) {
  for (int i = 0; i < d->n && i < max; ++i) {
    const tsr_case_change *c = &d->item[i];
    tsr_err_append("  %s: %s %s, %s %s", c->key, a_name, c->a ? c->a : "?", b_name,
                   c->b ? c->b : "?");
  }
  if (d->n > max) tsr_err_append("  ... and %d more", d->n - max);
}

/* ---- the record ------------------------------------------------------------------------ */

static const char set_tag[] = "# --set ";

/* 1 when the text's last line reads as a recorded override: a comment "# --set ..." of the
 * file's own, which tsr_case_load_record would take for one. */
static int ends_like_override(const char *text) {
  size_t end = strlen(text), tag = strlen(set_tag);
  while (end && text[end - 1] == '\n') --end;
  size_t start = end;
  while (start && text[start - 1] != '\n') --start;
  return end - start >= tag && strncmp(text + start, set_tag, tag) == 0;
}

char *tsr_case_record(const tsr_case *c) {
  size_t n = strlen(c->text) + 5;
  for (int i = 0; i < c->noverride; ++i) n += strlen(c->overrides[i]) + sizeof set_tag + 2;
  char *s = malloc(n);
  if (!s) return NULL;
  size_t w = (size_t)snprintf(s, n, "%s", c->text);
  if (ends_like_override(c->text)) /* a bare "#" line ends the file's text */
    w += (size_t)snprintf(s + w, n - w, "%s#\n", w && s[w - 1] != '\n' ? "\n" : "");
  for (int i = 0; i < c->noverride && w < n; ++i)
    w += (size_t)snprintf(s + w, n - w, "%s%s%s\n", w && s[w - 1] != '\n' ? "\n" : "", set_tag,
                          c->overrides[i]);
  return s;
}

tsr_err tsr_case_load_record(const char *name, const char *record, tsr_case **out) {
  *out = NULL;
  char *text = strdup(record);
  TSR_CHECK(text, TSR_ERR_MEMORY, "out of memory reading the case of '%s'", name);
  /* the overrides are the run of "# --set " lines that ends the record */
  size_t len = strlen(text);
  while (len && text[len - 1] == '\n') text[--len] = '\0';
  int n = 0;
  char *over[256];
  while (n < 256) {
    char *line = strrchr(text, '\n');
    line = line ? line + 1 : text;
    if (strncmp(line, set_tag, strlen(set_tag)) != 0) break;
    over[n++] = line + strlen(set_tag);
    if (line == text) {
      text[0] = '\0'; /* keeps the overrides, which lie past this NUL */
      break;
    }
    line[-1] = '\0';
  }
  /* collected from the end: back into the order they were given */
  for (int i = 0; i < n / 2; ++i) {
    char *t = over[i];
    over[i] = over[n - 1 - i];
    over[n - 1 - i] = t;
  }
  tsr_err err = tsr_case_load_string(name, text, n, over, out);
  free(text);
  return err;
}
