/* solver/graph.h without CUDA: no graphs, every step issued plainly. The CUDA build has
 * solver/graph_cuda.c instead. */
#include "solver/graph.h"

#ifndef TSR_HAVE_CUDA
#include <stddef.h>

tsr_err tsr_graph_create(struct tsr_run_ctx *x, tsr_graph **g) {
  (void)x;
  *g = NULL;
  return TSR_OK;
}

tsr_err tsr_graph_step(tsr_graph *g, struct tsr_run_ctx *x, int64_t step, double t,
                       tsr_graph_step_fn fn) {
  (void)g;
  (void)step;
  return fn(x, t);
}

tsr_err tsr_graph_finish(tsr_graph *g, tsr_run_result *res) {
  (void)g;
  res->graph_steps = 0;
  res->graph_gpu_time = 0.0;
  return TSR_OK;
}

const char *tsr_graph_mode(const tsr_graph *g, int64_t *replays) {
  (void)g;
  *replays = 0;
  return "off";
}

void tsr_graph_destroy(tsr_graph **g) {
  if (g) *g = NULL;
}
#else
typedef int tsr_graph_c_is_empty_with_cuda; /* ISO C wants a declaration in every file */
#endif
