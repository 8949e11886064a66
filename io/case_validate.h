/* Validation helpers shared by io/case*.c (private to io/): a list of problems that is sorted
 * by position and turned into one tsr_err message at the end, and typed readers of tree nodes
 * that report what was wrong and go on, so that one run shows every problem of a case. */
#ifndef TSR_CASE_VALIDATE_H
#define TSR_CASE_VALIDATE_H

#include <stddef.h>

#include "io/case.h"
#include "io/yamltree.h"

typedef struct {
  int src;       /* 0: the file; 1 + i: override i; sorts problems by where they were written */
  int line, col;
  int seq;       /* order of discovery, for a stable sort */
  char *text;
} tsr_case_problem;

typedef struct {
  tsr_case *c;
  tsr_case_problem *p;
  int np, cap;
  int oom;       /* an allocation failed: the load ends with TSR_ERR_MEMORY */
} tsr_vctx;

/* Records a problem at file/line/col (line 0: an override, file is its text; file NULL: no
 * position). The message is "POS: " + fmt. */
void tsr_vproblem(tsr_vctx *v, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Records a problem at node n (at the case file's start when n is NULL). */
void tsr_vat(tsr_vctx *v, const tsr_yaml_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records a problem at the key of map entry e. */
void tsr_vkey(tsr_vctx *v, const tsr_yaml_entry *e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sets the tsr_err message from the problems (sorted) and frees them. Returns TSR_OK when
 * there were none, TSR_ERR_MEMORY after an allocation failure, else TSR_ERR_INPUT. */
tsr_err tsr_vfinish(tsr_vctx *v);

/* strdup that records an allocation failure in v. */
char *tsr_vstrdup(tsr_vctx *v, const char *s);

/* The closest of cand[0..n-1] to word (Levenshtein distance <= max(2, len/3) and less than
 * both lengths), or NULL. */
const char *tsr_suggest(const char *word, const char *const *cand, int n);

/* Writes "a, b, c" into buf. */
void tsr_join(char *buf, size_t size, const char *const *cand, int n);

/* Reports every key of map that is not in allowed[0..n-1] as unknown, with a suggestion.
 * path is the dotted path of map ("" at the top). */
void tsr_vkeys(tsr_vctx *v, const char *path, const tsr_yaml_node *map,
               const char *const *allowed, int n);

/* Typed readers: return 1 and write *out when node is a valid value; otherwise report at
 * node ("KEY: expected ..., got ...") and return 0. */
int tsr_vnumber(tsr_vctx *v, const char *key, const tsr_yaml_node *n, double *out);
int tsr_vint(tsr_vctx *v, const char *key, const tsr_yaml_node *n, long *out);
/* As tsr_vint, for counts past int's range (at most max in magnitude). */
int tsr_vint64(tsr_vctx *v, const char *key, const tsr_yaml_node *n, int64_t max, int64_t *out);
int tsr_vbool(tsr_vctx *v, const char *key, const tsr_yaml_node *n, int *out);
int tsr_vstring(tsr_vctx *v, const char *key, const tsr_yaml_node *n, const char **out);
/* One of names[0..n-1]; unknown words get a suggestion among them. */
int tsr_vchoice(tsr_vctx *v, const char *key, const tsr_yaml_node *node,
                const char *const *names, int n, int *out);
/* A map (1), a null (0, nothing reported: an empty section), else reports and returns 0. */
int tsr_vmap(tsr_vctx *v, const char *key, const tsr_yaml_node *n);
/* A sequence (1), else reports and returns 0. */
int tsr_vseq(tsr_vctx *v, const char *key, const tsr_yaml_node *n);

/* An expression: a scalar string or number; fills e (text, loc, key). */
int tsr_vexpr(tsr_vctx *v, const char *key, const tsr_yaml_node *n, tsr_case_expr *e);

/* e = text with no position (a default); key as given. */
void tsr_vexpr_default(tsr_vctx *v, tsr_case_expr *e, const char *key, const char *text);

/* Deep copy of src into dst (dst empty). */
void tsr_vexpr_copy(tsr_vctx *v, tsr_case_expr *dst, const tsr_case_expr *src);

void tsr_case_expr_clear(tsr_case_expr *e);

/* Sections of the schema, in io/case_sections.c (e: the section's entry, NULL if absent). */
void tsr_case_read_exprs(tsr_vctx *v, const char *key, const tsr_yaml_entry *e, int required,
                         tsr_case_expr *out);
void tsr_case_read_boundary(tsr_vctx *v, const tsr_yaml_entry *e);
void tsr_case_read_time(tsr_vctx *v, const tsr_yaml_node *root, const tsr_yaml_entry *e);
/* An explicit scheme's name (time.scheme's: euler, ssp_rk2, ...) into *out; 1 when valid. */
int tsr_case_read_scheme(tsr_vctx *v, const char *key, const tsr_yaml_node *n, tsr_scheme *out);
/* time.scheme, time.dt and time.cfl of the time section t (a map), the explicit method's */
void tsr_case_read_time_scheme(tsr_vctx *v, const tsr_yaml_node *t);
/* time.end or time.steps, exactly one, of the time section e (a map); returns steps' entry */
const tsr_yaml_entry *tsr_case_read_time_span(tsr_vctx *v, const tsr_yaml_entry *e);
void tsr_case_read_decomposition(tsr_vctx *v, const tsr_yaml_entry *e);
void tsr_case_read_output(tsr_vctx *v, const tsr_yaml_entry *e);
void tsr_case_read_comm(tsr_vctx *v, const tsr_yaml_entry *e);
void tsr_case_read_gpu(tsr_vctx *v, const tsr_yaml_entry *e);
void tsr_case_read_rebalance(tsr_vctx *v, const tsr_yaml_entry *e);
/* method: pinn (io/case_pinn.c): time: (end; the explicit method's scheme, dt and cfl are
 * checked and unused; none for a steady model), the pinn: section (checked and unused with
 * method explicit or implicit, so that one case file runs with either method), and the keys
 * and models the method cannot take. */
void tsr_case_read_pinn_time(tsr_vctx *v, const tsr_yaml_node *root, const tsr_yaml_entry *e);
void tsr_case_read_pinn(tsr_vctx *v, const tsr_yaml_node *root, const tsr_yaml_entry *e);
void tsr_case_read_debug(tsr_vctx *v, const tsr_yaml_entry *e);
/* method: implicit (io/case_implicit.c): its time: section (scheme, dt, end or steps,
 * adaptivity), the petsc: section (refused with another method), and the keys, models and
 * backends the method cannot take. */
void tsr_case_read_implicit_time(tsr_vctx *v, const tsr_yaml_node *root, const tsr_yaml_entry *e);
void tsr_case_read_implicit(tsr_vctx *v, const tsr_yaml_node *root, const tsr_yaml_entry *e);
/* parareal (io/case_parareal.c): the parareal: section with method explicit and
 * decomposition.time_slices > 1 (refused otherwise), and the keys it cannot take. */
void tsr_case_read_parareal(tsr_vctx *v, const tsr_yaml_node *root, const tsr_yaml_entry *e);

#endif
