/* Expressions of case files: a subset of C, evaluated on the host with muparser point by
 * point, over grids by a walk of the same syntax tree that gives muparser's bits
 * (tsr_expr_eval_grid), and compiled for the device with NVRTC from the same canonical C
 * text.
 *
 * Accepted: decimal numbers (123, 1.5, .5, 1e-3, 2.5E+4; no suffixes, no hex), the variables
 * x, y, z, t, the case's params, the constant pi, + - * / with unary + and -, parentheses,
 * and these functions with C's (libm's) semantics: sin cos tan asin acos atan atan2 sinh cosh
 * tanh exp log log10 sqrt cbrt fabs floor ceil pow fmin fmax fmod erf. Nothing else: `^`,
 * comparisons, `?:`, assignments and unknown names are refused with the column of the
 * offending character and, for names, a "did you mean" suggestion. Numbers are all double,
 * as in C with every literal written as a double. Whitespace (space, tab, newline) may
 * separate tokens. Tokens that C would read differently are refused too: `--`, `++` (write
 * `- -x`), `**`, and comments. At most 4096 characters and 256 levels of nesting.
 *
 * Host evaluation agrees bit for bit with the C text compiled on the host with
 * -ffp-contract=off: same grouping, libm's functions, no reassociation. (A C compiler may
 * itself rewrite pow(x, 2.0) as x*x or fold libm calls on constants with exact arithmetic,
 * which can differ from libm in the last bit; that is the compiler's doing, not ours.) */
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
 * adds FILE:LINE:COL). env may be NULL (no params); the params' values are copied, so later
 * changes to env do not reach a compiled expression. A param whose name is not an
 * identifier or clashes with x, y, z, t, pi, a function or another param is TSR_ERR_INPUT
 * with *errcol = -1 (the fault is in the params, not in text). errcol may be NULL.
 * On error *e is NULL. Errors: TSR_ERR_INPUT, TSR_ERR_MEMORY, TSR_ERR_INTERNAL (muparser
 * refused our rendering: a bug). */
tsr_err tsr_expr_compile(const char *text, const tsr_expr_env *env, tsr_expr **e, int *errcol);

/* Evaluates at one point. Not thread-safe on one tsr_expr (muparser keeps a stack); use
 * one tsr_expr per thread. Returns NaN if muparser reports an error (never expected). */
double tsr_expr_eval(tsr_expr *e, double x, double y, double z, double t);

/* Evaluates at n points (arrays of n; z may be NULL for 0), writing out[0..n-1]. */
void tsr_expr_eval_many(tsr_expr *e, size_t n, const double *x, const double *y,
                        const double *z, double t, double *out);

/* A structured set of points: point (i, j, k), 0 <= i < n[0], 0 <= j < n[1], 0 <= k < n[2],
 * is (coord[0][i], coord[1][j], coord[2][k]) and its value goes to
 * out[i * stride[0] + j * stride[1] + k * stride[2]]. coord[d] NULL means that coordinate
 * is 0 everywhere (2D: z; n[d] is then usually 1). Host memory, borrowed for the call. */
typedef struct {
  int n[3];
  const double *coord[3];
  ptrdiff_t stride[3];
} tsr_expr_points;

/* Evaluates over a grid, bit for bit what tsr_expr_eval gives at each point: it walks the
 * same syntax tree with the same operations in the same order and the same libm wrappers
 * (NaNs may differ in payload only). Fast because a subexpression is computed only as often
 * as the coordinates it depends on change: in sin(pi*x)*sin(pi*y)*exp(-t), sin(pi*x) once per
 * i, sin(pi*y) once per j, exp(-t) once per call. What varies along every axis of the grid
 * (x and y, or z, too) is computed row by row (x rows), the rows shared out among OpenMP
 * threads (its own parallel region; inside another one it runs on that thread alone). Does
 * not modify e, so threads may share one tsr_expr.
 * Scratch: each subexpression that does not vary along every axis gets an array over its
 * own axes (at most a plane), each other one an x row per thread, freed before return.
 * Errors: TSR_ERR_MEMORY; TSR_ERR_INTERNAL for NULL arguments. n[d] <= 0: nothing done. */
tsr_err tsr_expr_eval_grid(const tsr_expr *e, const tsr_expr_points *g, double t, double *out);

/* Evaluates e over grid at t as tsr_expr_eval_grid does (its strides are not used) and looks
 * for a value that is not finite: *found 1 with the first such point's coordinates in xyz (0
 * where grid has no coordinate) and the value in *value, else *found 0. For messages that name
 * where a case's expression fails. Scratch: one plane of the grid, freed before return.
 * Errors: TSR_ERR_MEMORY. */
tsr_err tsr_expr_find_nonfinite(const tsr_expr *e, const tsr_expr_points *grid, double t,
                                int *found, double xyz[3], double *value);

/* 1 when the expression mentions name (a variable, param, pi or a function), else 0. */
int tsr_expr_uses(const tsr_expr *e, const char *name);

/* 1 when the expression mentions t. */
int tsr_expr_depends_on_time(const tsr_expr *e);

/* The canonical C source of the expression (every literal a double, params by name, pi as a
 * literal), NUL-terminated into buf of size n. Numbers are %.17g (exact round trip) with ".0"
 * added to integers; functions keep their C names; binary operators have one space on each
 * side; parentheses appear only where C's grouping needs them (user's redundant ones are
 * dropped, a right operand of equal precedence keeps them: "a - (b - c)"); unary minus is
 * always parenthesised, "(-x)", unary plus dropped. E.g. "sin(pi*x)*exp(-2*t)" gives
 * "sin(3.1415926535897931 * x) * exp((-2.0) * t)". Errors: TSR_ERR_INTERNAL when n is too
 * small (the message says how many bytes are needed). */
tsr_err tsr_expr_to_c(const tsr_expr *e, char *buf, size_t n);

/* Frees and sets *e to NULL; accepts NULL. */
void tsr_expr_destroy(tsr_expr **e);

#endif
