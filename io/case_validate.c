#define _POSIX_C_SOURCE 200809L /* strdup, strcasecmp, stat */
#include "io/case_validate.h"
#include "io/text.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int source_of(const tsr_case *c, const char *file) {
  for (int i = 0; i < c->noverride; ++i)
    if (file == c->overrides[i]) return 1 + i;
  return 0;
}

static void vadd(tsr_vctx *v, const char *file, int line, int col, const char *fmt,
                 va_list ap) {
  char body[1024], pos[600];
  vsnprintf(body, sizeof body, fmt, ap);
  if (line > 0)
    snprintf(pos, sizeof pos, "%s:%d:%d: ", file, line, col);
  else if (file)
    snprintf(pos, sizeof pos, "--set %s: ", file);
  else
    pos[0] = '\0';
  if (v->np == v->cap) {
    int cap = v->cap ? 2 * v->cap : 16;
    tsr_case_problem *p = realloc(v->p, (size_t)cap * sizeof *p);
    if (!p) {
      v->oom = 1;
      return;
    }
    v->p = p;
    v->cap = cap;
  }
  size_t len = strlen(pos) + strlen(body) + 1;
  char *text = malloc(len);
  if (!text) {
    v->oom = 1;
    return;
  }
  snprintf(text, len, "%s%s", pos, body);
  v->p[v->np] = (tsr_case_problem){source_of(v->c, file), line, col, v->np, text};
  v->np++;
}

void tsr_vproblem(tsr_vctx *v, const char *file, int line, int col, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vadd(v, file, line, col, fmt, ap);
  va_end(ap);
}

void tsr_vat(tsr_vctx *v, const tsr_yaml_node *n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (n)
    vadd(v, n->file, n->line, n->col, fmt, ap);
  else
    vadd(v, v->c->path, 1, 1, fmt, ap);
  va_end(ap);
}

void tsr_vkey(tsr_vctx *v, const tsr_yaml_entry *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vadd(v, e->file, e->line, e->col, fmt, ap);
  va_end(ap);
}

static int problem_cmp(const void *a, const void *b) {
  const tsr_case_problem *p = a, *q = b;
  if (p->src != q->src) return p->src - q->src;
  if (p->line != q->line) return p->line - q->line;
  if (p->col != q->col) return p->col - q->col;
  return p->seq - q->seq;
}

tsr_err tsr_vfinish(tsr_vctx *v) {
  tsr_err err = TSR_OK;
  if (v->np) qsort(v->p, (size_t)v->np, sizeof *v->p, problem_cmp);
  if (v->oom) {
    err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory reading case '%s'",
                      v->c->path ? v->c->path : "?");
  } else if (v->np) {
    err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "%s", v->p[0].text);
    for (int i = 1; i < v->np; ++i) tsr_err_append("%s", v->p[i].text);
  }
  for (int i = 0; i < v->np; ++i) free(v->p[i].text);
  free(v->p);
  v->p = NULL;
  v->np = v->cap = 0;
  return err;
}

char *tsr_vstrdup(tsr_vctx *v, const char *s) {
  char *d = strdup(s);
  if (!d) v->oom = 1;
  return d;
}

const char *tsr_suggest(const char *word, const char *const *cand, int n) {
  const char *best = NULL;
  int bestd = 64;
  int lw = (int)strlen(word);
  for (int i = 0; i < n; ++i) {
    int d = tsr_text_distance(word, cand[i], 0);
    int lc = (int)strlen(cand[i]);
    int limit = lw / 3 > 2 ? lw / 3 : 2;
    /* a distance equal to a whole word's length is a replacement, not a typo */
    if (d <= limit && d < lw && d < lc && d < bestd) {
      best = cand[i];
      bestd = d;
    }
  }
  return best;
}

void tsr_join(char *buf, size_t size, const char *const *cand, int n) {
  size_t at = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && at < size; ++i) {
    int w = snprintf(buf + at, size - at, "%s%s", i ? ", " : "", cand[i]);
    if (w < 0) break;
    at += (size_t)w;
  }
}

void tsr_vkeys(tsr_vctx *v, const char *path, const tsr_yaml_node *map,
               const char *const *allowed, int n) {
  const char *dot = path[0] ? "." : "";
  for (int i = 0; i < map->n; ++i) {
    const tsr_yaml_entry *e = &map->entries[i];
    int known = 0;
    for (int k = 0; k < n && !known; ++k) known = strcmp(e->key, allowed[k]) == 0;
    if (known) continue;
    const char *s = tsr_suggest(e->key, allowed, n);
    if (s) {
      tsr_vkey(v, e, "unknown key '%s%s%s' (did you mean '%s%s%s'?)", path, dot, e->key, path,
               dot, s);
    } else {
      char list[512];
      tsr_join(list, sizeof list, allowed, n);
      tsr_vkey(v, e, "unknown key '%s%s%s'; valid keys %s%s: %s", path, dot, e->key,
               path[0] ? "in " : "at the top level", path, list);
    }
  }
}

/* "'abc'", "a map", "nothing", ... for "got ..." in messages. */
static const char *describe(const tsr_yaml_node *n, char *buf, size_t size) {
  if (!n || tsr_yaml_is_null(n)) return "nothing";
  if (n->kind == TSR_YAML_MAP) return "a map";
  if (n->kind == TSR_YAML_SEQ) return "a sequence";
  int len = (int)strlen(n->text);
  const char *more = len > 40 ? "..." : "";
  snprintf(buf, size, "%s'%.40s%s'", n->quoted ? "the quoted string " : "", n->text, more);
  return buf;
}

/* A plain scalar, or NULL after reporting that one was expected. */
static const char *plain(tsr_vctx *v, const char *key, const tsr_yaml_node *n,
                         const char *what) {
  if (n && n->kind == TSR_YAML_SCALAR && !n->quoted && !n->block && !tsr_yaml_is_null(n))
    return n->text;
  char buf[80];
  tsr_vat(v, n, "%s: expected %s, got %s%s", key, what, describe(n, buf, sizeof buf),
          n && n->quoted ? " (remove the quotes)" : "");
  return NULL;
}

static int parse_double(const char *s, double *out) {
  if (!*s || strpbrk(s, "xXpP")) return 0; /* no C99 hex floats in case files */
  char *end;
  errno = 0;
  double x = strtod(s, &end);
  if (*end || !isfinite(x)) return 0;
  *out = x;
  return 1;
}

int tsr_vnumber(tsr_vctx *v, const char *key, const tsr_yaml_node *n, double *out) {
  const char *s = plain(v, key, n, "a number");
  if (!s) return 0;
  if (parse_double(s, out)) return 1;
  tsr_vat(v, n, "%s: expected a number, got '%s'", key, s);
  return 0;
}

int tsr_vint(tsr_vctx *v, const char *key, const tsr_yaml_node *n, long *out) {
  const char *s = plain(v, key, n, "an integer");
  if (!s) return 0;
  char *end;
  errno = 0;
  long x = strtol(s, &end, 10);
  if (*s && !*end && errno == 0 && x >= -2147483647L && x <= 2147483647L) {
    *out = x;
    return 1;
  }
  if (*s && !*end) {
    tsr_vat(v, n, "%s: integer out of range [-2147483647, 2147483647], got '%s'", key, s);
    return 0;
  }
  tsr_vat(v, n, "%s: expected an integer, got '%s'", key, s);
  return 0;
}

int tsr_vint64(tsr_vctx *v, const char *key, const tsr_yaml_node *n, int64_t max, int64_t *out) {
  const char *s = plain(v, key, n, "an integer");
  if (!s) return 0;
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (*s && !*end && errno == 0 && x >= -max && x <= max) {
    *out = (int64_t)x;
    return 1;
  }
  if (*s && !*end)
    tsr_vat(v, n, "%s: integer out of range [%lld, %lld], got '%s'", key, -(long long)max,
            (long long)max, s);
  else tsr_vat(v, n, "%s: expected an integer, got '%s'", key, s);
  return 0;
}

int tsr_vbool(tsr_vctx *v, const char *key, const tsr_yaml_node *n, int *out) {
  static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
  if (n && n->kind == TSR_YAML_SCALAR && !n->quoted) {
    for (int i = 0; i < 3; ++i) {
      if (strcasecmp(n->text, yes[i]) == 0) return *out = 1;
      if (strcasecmp(n->text, no[i]) == 0) return (*out = 0), 1;
    }
  }
  char buf[80];
  tsr_vat(v, n, "%s: expected true or false, got %s", key, describe(n, buf, sizeof buf));
  return 0;
}

int tsr_vstring(tsr_vctx *v, const char *key, const tsr_yaml_node *n, const char **out) {
  if (n && n->kind == TSR_YAML_SCALAR && !tsr_yaml_is_null(n)) {
    *out = n->text;
    return 1;
  }
  char buf[80];
  tsr_vat(v, n, "%s: expected a string, got %s", key, describe(n, buf, sizeof buf));
  return 0;
}

int tsr_vchoice(tsr_vctx *v, const char *key, const tsr_yaml_node *node,
                const char *const *names, int n, int *out) {
  const char *s;
  if (!tsr_vstring(v, key, node, &s)) return 0;
  for (int i = 0; i < n; ++i)
    if (strcmp(s, names[i]) == 0) return (*out = i), 1;
  char list[512];
  tsr_join(list, sizeof list, names, n);
  const char *best = tsr_suggest(s, names, n);
  if (best)
    tsr_vat(v, node, "%s: unknown value '%s' (did you mean '%s'?); expected one of %s", key, s,
            best, list);
  else
    tsr_vat(v, node, "%s: unknown value '%s'; expected one of %s", key, s, list);
  return 0;
}

int tsr_vmap(tsr_vctx *v, const char *key, const tsr_yaml_node *n) {
  if (n && n->kind == TSR_YAML_MAP) return 1;
  if (tsr_yaml_is_null(n)) return 0;
  char buf[80];
  tsr_vat(v, n, "%s: expected a map (key: value lines), got %s", key,
          describe(n, buf, sizeof buf));
  return 0;
}

int tsr_vseq(tsr_vctx *v, const char *key, const tsr_yaml_node *n) {
  if (n && n->kind == TSR_YAML_SEQ) return 1;
  char buf[80];
  tsr_vat(v, n, "%s: expected a sequence such as [a, b], got %s", key,
          describe(n, buf, sizeof buf));
  return 0;
}

void tsr_case_expr_clear(tsr_case_expr *e) {
  free(e->text);
  free(e->key);
  *e = (tsr_case_expr){0};
}

int tsr_vexpr(tsr_vctx *v, const char *key, const tsr_yaml_node *n, tsr_case_expr *e) {
  char buf[80];
  if (!n || n->kind != TSR_YAML_SCALAR || tsr_yaml_is_null(n)) {
    tsr_vat(v, n, "%s: expected an expression (a string or a number), got %s", key,
            describe(n, buf, sizeof buf));
    return 0;
  }
  if (!n->text[strspn(n->text, " \t\r\n")]) {
    tsr_vat(v, n, "%s: expected an expression, got an empty string", key);
    return 0;
  }
  tsr_case_expr_clear(e);
  e->text = tsr_vstrdup(v, n->text);
  e->key = tsr_vstrdup(v, key);
  /* the loc names the expression's first character, past an opening quote */
  e->loc = (tsr_loc){n->file, n->line, n->col + (n->quoted ? 1 : 0)};
  return 1;
}

void tsr_vexpr_default(tsr_vctx *v, tsr_case_expr *e, const char *key, const char *text) {
  tsr_case_expr_clear(e);
  e->text = tsr_vstrdup(v, text);
  e->key = tsr_vstrdup(v, key);
}

void tsr_vexpr_copy(tsr_vctx *v, tsr_case_expr *dst, const tsr_case_expr *src) {
  tsr_case_expr_clear(dst);
  if (src->text) dst->text = tsr_vstrdup(v, src->text);
  if (src->key) dst->key = tsr_vstrdup(v, src->key);
  dst->loc = src->loc;
}
