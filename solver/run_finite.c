/* Where a value that is not finite came from (solver/run_internal.h): the case's expressions
 * searched on the host, cell by cell, only once a monitor's sums have shown one, so that a
 * message names the key, a point and the time rather than blaming the step. */
#include <math.h>
#include <stdlib.h>

#include "io/case_expr.h"
#include "solver/run_internal.h"

tsr_err tsr_run_find_nonfinite(const tsr_run_ctx *x, const tsr_expr *e, const tsr_case_expr *ce,
                               double t) {
  const tsr_box *b = &x->box;
  tsr_expr_points g = {0}; /* strides: unused by the search */
  double *c;
  int len = tsr_box_len(b, 0) + tsr_box_len(b, 1) + tsr_box_len(b, 2);
  TSR_ALLOC(c, len, "cell coordinates");
  tsr_box_centres(x->c, b, c, &g);
  int found = 0;
  double xyz[3], v;
  tsr_err err = tsr_expr_find_nonfinite(e, &g, t, &found, xyz, &v);
  free(c);
  TSR_CALL(err);
  return found ? tsr_case_nonfinite(x->c, ce, v, xyz, 1, t) : TSR_OK;
}

tsr_err tsr_run_expressions_finite(const tsr_run_ctx *x, int initial, double t) {
  const tsr_case *c = x->c;
  for (int q = 0; q < c->ncomp && initial; ++q)
    if (x->init_expr[q]) TSR_CALL(tsr_run_find_nonfinite(x, x->init_expr[q], &c->initial[q], t));
  if (initial) return TSR_OK;
  if (x->bc) TSR_CALL(tsr_bc_check_finite(x->bc, t));
  for (int q = 0; q < c->ncomp; ++q)
    if (x->src_expr[q]) TSR_CALL(tsr_run_find_nonfinite(x, x->src_expr[q], &c->source[q], t));
  return TSR_OK;
}

tsr_err tsr_run_blame_expressions(tsr_run_ctx *x, int initial, double t0, double t1) {
  tsr_err err = tsr_run_expressions_finite(x, initial, t1);
  if (!err && !initial && t0 != t1) err = tsr_run_expressions_finite(x, 0, t0);
  return tsr_run_agree(x->comm, err);
}

int tsr_run_norms_finite(const tsr_run_ctx *x, const tsr_run_norms *nm) {
  for (int q = 0; q < x->c->ncomp; ++q)
    if (!isfinite(nm->min[q]) || !isfinite(nm->max[q])) return 0;
  return 1;
}
