/* CUDA graphs of several steps for parareal (graphs.h). */
#include "solver/parareal/graphs.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/cuda_util.h"
#include "kernels/step_time.h"
#include "solver/backend.h"
#include "solver/explicit.h"
#include "solver/run_internal.h"

struct tsr_pr_graph {
  cudaStream_t stream;   /* the context's compute stream */
  cudaGraphExec_t exec;  /* chunk steps, from the slots as they were (flip_cap) */
  int chunk, flip_cap;
  int plain_done;        /* a plain step ran first: it allocates what steps keep */
  int fallback;          /* capture failed: plain steps from then on */
  int timed;             /* boundary values or sources depend on t: the steps need their times */
  int64_t *dstep;        /* device step counter, advanced by each step's time kernel */
  double *dtimes;        /* device: the stage times of the step running */
  int64_t dstep_next;    /* what *dstep holds once the work issued so far ran; -1: unknown */
  tsr_step_time_coef coef;
  double dt;
};

tsr_err tsr_pr_graph_create(tsr_run_ctx *x, int chunk, tsr_pr_graph **gp) {
  *gp = NULL;
  if (x->be != &tsr_backend_cuda || x->c->gpu.graphs == TSR_GRAPHS_OFF) return TSR_OK;
  if (x->c->gpu.graphs == TSR_GRAPHS_AUTO && x->size > 1) return TSR_OK; /* as solver/graph.h */
  TSR_CHECK(chunk >= 2 && chunk % 2 == 0 && x->scheme.nstage <= TSR_STEP_TIME_MAX,
            TSR_ERR_INTERNAL, "parareal graphs: chunk %d, %d stages", chunk, x->scheme.nstage);
  tsr_pr_graph *g;
  TSR_ALLOC(g, 1, "parareal's CUDA graphs");
  *gp = g;
  g->stream = tsr_backend_cuda_stream(x);
  g->chunk = chunk;
  g->dt = x->dt;
  g->dstep_next = -1;
  g->timed = tsr_run_timed(x);
  g->coef.n = x->scheme.nstage;
  for (int s = 0; s < x->scheme.nstage; ++s) g->coef.c[s] = x->scheme.stage[s].c;
  TSR_CUDA(cudaMalloc((void **)&g->dstep, sizeof *g->dstep));
  TSR_CUDA(cudaMalloc((void **)&g->dtimes, TSR_STEP_TIME_MAX * sizeof *g->dtimes));
  return TSR_OK;
}

/* The host's caches of time-dependent values belong to the captured steps afterwards. */
static void forget_timed(tsr_run_ctx *x) {
  tsr_backend_cuda_forget_timed(x);
  if (x->src_timed) x->src_valid = 0;
}

static tsr_err capture(tsr_pr_graph *g, tsr_run_ctx *x, int64_t step) {
  g->flip_cap = x->flip;
  forget_timed(x);
  TSR_CUDA(cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal));
  tsr_err err = TSR_OK;
  for (int i = 0; i < g->chunk && !err; ++i) {
    if (g->timed) {
      err = tsr_step_time_cuda(g->dstep, &g->coef, g->dt, g->dtimes, g->stream);
      x->tdev = g->dtimes;
    }
    if (!err) err = tsr_explicit_advance(x, step + i, 1, 0.0);
  }
  x->tdev = NULL;
  cudaGraph_t graph = NULL;
  cudaError_t ce = cudaStreamEndCapture(g->stream, &graph);
  if (!err && ce != cudaSuccess)
    err = tsr_cuda_fail((int)ce, "cudaStreamEndCapture", __FILE__, __LINE__);
  if (!err) {
    ce = cudaGraphInstantiate(&g->exec, graph, cudaGraphInstantiateFlagUseNodePriority);
    if (ce != cudaSuccess) {
      g->exec = NULL;
      err = tsr_cuda_fail((int)ce, "cudaGraphInstantiate", __FILE__, __LINE__);
    }
  }
  if (graph) cudaGraphDestroy(graph);
  forget_timed(x);
  if (x->flip != g->flip_cap) tsr_explicit_swap_slots(x); /* a capture that stopped half-way */
  if (err) (void)cudaGetLastError();
  return err;
}

tsr_err tsr_pr_graph_begin(tsr_pr_graph *g, tsr_run_ctx *x, int64_t first) {
  (void)first;
  if (g && g->exec && x->flip != g->flip_cap) tsr_explicit_swap_slots(x);
  return TSR_OK;
}

tsr_err tsr_pr_graph_issue(tsr_pr_graph *g, tsr_run_ctx *x, int64_t step, int64_t left,
                           int64_t *issued) {
  *issued = 1;
  if (!g || g->fallback) return tsr_explicit_advance(x, step, 1, 0.0);
  if (!g->plain_done) {
    g->plain_done = 1;
    return tsr_explicit_advance(x, step, 1, 0.0);
  }
  /* the remainder of a range, or slots the graph was not captured with (an odd number of
   * plain steps before it): plain steps */
  if (left < g->chunk || (g->exec && x->flip != g->flip_cap))
    return tsr_explicit_advance(x, step, 1, 0.0);
  if (!g->exec) {
    /* the ranks of the group capture together (their NCCL calls must match) */
    tsr_err err = tsr_run_agree(x->comm, capture(g, x, step));
    if (err) {
      g->fallback = 1;
      if (x->rank == 0)
        fprintf(stderr, "tessera: warning: parareal: capturing steps into a CUDA graph failed; "
                        "plain launches from here: %s\n", tsr_err_message());
      return tsr_explicit_advance(x, step, 1, 0.0);
    }
  }
  if (g->timed && g->dstep_next != step)
    TSR_CALL(tsr_step_time_set_cuda(g->dstep, step, g->stream));
  TSR_CUDA(cudaGraphLaunch(g->exec, g->stream));
  g->dstep_next = step + g->chunk;
  *issued = g->chunk;
  return TSR_OK;
}

void tsr_pr_graph_destroy(tsr_pr_graph **gp) {
  if (!gp || !*gp) return;
  tsr_pr_graph *g = *gp;
  if (g->stream) cudaStreamSynchronize(g->stream);
  if (g->exec) cudaGraphExecDestroy(g->exec);
  if (g->dstep) cudaFree(g->dstep);
  if (g->dtimes) cudaFree(g->dtimes);
  free(g);
  *gp = NULL;
}
