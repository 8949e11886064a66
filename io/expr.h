/* Expressions of case files: a subset of C, evaluated on the host with muparser and (GPU
 * issue) compiled for the device with NVRTC from the same canonical C text.
 *
 * Accepted: decimal numbers (123, 1.5, .5, 1e-3, 2.5E+4; no suffixes, no hex), the variables
 * x, y, z, t, the case's params, the constant pi, + - * / with unary + and -, parentheses,
 * and these functions with C's (libm's) semantics: sin cos tan asin acos atan atan2 sinh cosh
 * tanh exp log log10 sqrt cbrt fabs floor ceil pow fmin fmax fmod erf. Nothing else: `^`,
 * comparisons, `?:`, assignments and unknown names are refused with the column of the
 * offending character and, for names, a "did you mean" suggestion. Numbers are all double,
 * as in C with every literal written as a double. */
#ifndef TSR_EXPR_H
#define TSR_EXPR_H

#include <stddef.h>

#include "io/error.h"

typedef struct tsr_expr tsr_expr;

/* The names an expression may use besides x, y, z, t and pi. Borrowed for the call. */
typedef struct {
  int nparam;
  const char *const *names;
  const double *values;
} tsr_expr_env;

/* Compiles text. On success *e is owned by the caller (tsr_expr_destroy). On a malformed
 * expression returns TSR_ERR_INPUT, sets *errcol to the 0-based offset of the offending
 * character in text, and the message says what was wrong (no position prefix; the caller
 * adds FILE:LINE:COL). Errors: TSR_ERR_INPUT, TSR_ERR_MEMORY. */
tsr_err tsr_expr_compile(const char *text, const tsr_expr_env *env, tsr_expr **e, int *errcol);

/* Evaluates at one point. Not thread-safe on one tsr_expr (muparser keeps a stack). */
double tsr_expr_eval(tsr_expr *e, double x, double y, double z, double t);

/* Evaluates at n points (arrays of n; z may be NULL for 0), writing out[0..n-1]. */
void tsr_expr_eval_many(tsr_expr *e, size_t n, const double *x, const double *y,
                        const double *z, double t, double *out);

/* 1 when the expression mentions name (a variable or param), else 0. */
int tsr_expr_uses(const tsr_expr *e, const char *name);

/* 1 when the expression mentions t. */
int tsr_expr_depends_on_time(const tsr_expr *e);

/* The canonical C source of the expression (every literal a double, params by name, pi as a
 * literal), NUL-terminated into buf of size n. Errors: TSR_ERR_INTERNAL when n is too small. */
tsr_err tsr_expr_to_c(const tsr_expr *e, char *buf, size_t n);

/* Frees and sets *e to NULL; accepts NULL. */
void tsr_expr_destroy(tsr_expr **e);

#endif
