/* Glue between case files and expressions: compiling a case's expression with its params and
 * reporting errors at the expression's position in the case file. */
#ifndef TSR_CASE_EXPR_H
#define TSR_CASE_EXPR_H

#include "io/case.h"
#include "io/expr.h"

/* The names and values of the case's params (borrowed from c). */
tsr_expr_env tsr_case_env(const tsr_case *c);

/* Compiles e (which must have text). Errors: TSR_ERR_INPUT with
 * "FILE:LINE:COL: KEY: message" (COL of the offending character), or for an override
 * "--set ...: KEY: message (column N of the expression)". *out owned by the caller. */
tsr_err tsr_case_compile(const tsr_case *c, const tsr_case_expr *e, tsr_expr **out);

/* The error for e, which is not finite (value v) at the point xyz (the grid's dimensions
 * named x, y, z) and time t (timed 0: a steady case, no time said): TSR_ERR_INPUT with
 * "POS: KEY: "TEXT" is nan at x = .., y = .., t = ..: ..." and what to check. Returns the code.
 * For every method's check of a case's values (initial, boundary, source, exact). */
tsr_err tsr_case_nonfinite(const tsr_case *c, const tsr_case_expr *e, double v,
                           const double xyz[3], int timed, double t);

#endif
