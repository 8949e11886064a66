/* solver/parareal/graphs.h without CUDA: every step is issued plainly. */
#include "solver/parareal/graphs.h"

#ifndef TSR_HAVE_CUDA
#include <stddef.h>

#include "solver/explicit.h"
#include "solver/run_internal.h"

tsr_err tsr_pr_graph_create(struct tsr_run_ctx *x, int chunk, tsr_pr_graph **g) {
  (void)x;
  (void)chunk;
  *g = NULL;
  return TSR_OK;
}

tsr_err tsr_pr_graph_begin(tsr_pr_graph *g, struct tsr_run_ctx *x, int64_t first) {
  (void)g;
  (void)x;
  (void)first;
  return TSR_OK;
}

tsr_err tsr_pr_graph_issue(tsr_pr_graph *g, struct tsr_run_ctx *x, int64_t step, int64_t left,
                           int64_t *issued) {
  (void)g;
  (void)left;
  *issued = 1;
  return tsr_explicit_advance(x, step, 1, 0.0);
}

void tsr_pr_graph_destroy(tsr_pr_graph **g) {
  if (g) *g = NULL;
}
#else
typedef int tsr_pr_graphs_c_is_empty_with_cuda; /* ISO C wants a declaration in every file */
#endif
