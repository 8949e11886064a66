/* Batched fine solves for parareal's slices sharing one GPU (batch.h). */
#include "solver/parareal/batch.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/boundary.h"
#include "kernels/cuda_util.h"
#include "kernels/stage.h"
#include "solver/backend.h"
#include "solver/parareal/ops.h"
#include "solver/run_internal.h"

/* Steps per graph launch: an even number (each context's slots are back where they were
 * after it), enough that a launch's host cost is small against the GPU time of that many
 * batched steps. */
#define BATCH_CHUNK 32

struct tsr_pr_batch {
  tsr_run_ctx *fx;
  int n;
  cudaStream_t stream;            /* fx[0]'s compute stream */
  const tsr_bc_face *faces[TSR_BC_MAX_FACES];
  const double *vals[TSR_BC_MAX_FACES];
  int nface;
  int graphs;                     /* gpu.graphs is not off, and no capture failed */
  int warm;                       /* plain steps ran before the first capture */
  cudaGraphExec_t exec;           /* BATCH_CHUNK steps of the contexts in cap[0 .. ncap) */
  int *cap, ncap;
  /* one stage's field tables */
  tsr_field **in, **out, **acc, **src;
  const tsr_field **base;
};

static int timed(tsr_run_ctx *x) {
  int t = x->src_timed;
  for (int i = 0; i < tsr_bc_nfaces(x->bc); ++i) t |= tsr_bc_face_timed(x->bc, i);
  return t;
}

tsr_err tsr_pr_batch_create(tsr_run_ctx *fx, int n, tsr_pr_batch **bp) {
  *bp = NULL;
  const char *env = getenv("TESSERA_PARAREAL_BATCH");
  if (n < 2 || fx[0].be != &tsr_backend_cuda || fx[0].size != 1 || (env && !strcmp(env, "off")))
    return TSR_OK;
  for (int i = 0; i < n; ++i) {
    tsr_run_ctx *x = &fx[i];
    if (x->c->method != TSR_METHOD_EXPLICIT || x->nshell != 0 || x->rb || timed(x) ||
        !tsr_box_equal(&x->interior, &x->box) || !tsr_box_equal(&x->box, &fx[0].box))
      return TSR_OK;
    for (int f = 0; f < 6; ++f)
      if (x->exchanged[f]) return TSR_OK;
  }
  tsr_pr_batch *b;
  TSR_ALLOC(b, 1, "parareal's batches");
  *bp = b;
  b->fx = fx;
  b->n = n;
  b->stream = tsr_backend_cuda_stream(&fx[0]);
  b->graphs = fx[0].c->gpu.graphs != TSR_GRAPHS_OFF;
  TSR_ALLOC(b->cap, (size_t)n, "parareal's batches");
  TSR_ALLOC(b->in, (size_t)n, "parareal's batches");
  TSR_ALLOC(b->out, (size_t)n, "parareal's batches");
  TSR_ALLOC(b->acc, (size_t)n, "parareal's batches");
  TSR_ALLOC(b->src, (size_t)n, "parareal's batches");
  TSR_ALLOC(b->base, (size_t)n, "parareal's batches");
  /* nothing depends on t: values evaluated once serve every step of every slice (the boundary
   * values of fx[0] are those of every context: the same box and expressions) */
  TSR_CALL(tsr_backend_cuda_faces(&fx[0], 0.0, b->faces, b->vals, &b->nface));
  for (int i = 0; i < n; ++i) {
    TSR_CALL(tsr_run_source_eval(&fx[i], 0.0));
    TSR_CALL(fx[i].be->sync(&fx[i]));
  }
  return TSR_OK;
}

/* One step of the contexts act[0 .. na), stage by stage as tsr_run_advance issues them on one
 * rank with no exchange: the boundary's ghosts of the stage's input, then the stage over the
 * box. */
static tsr_err step(tsr_pr_batch *b, int na, const int *act) {
  tsr_run_ctx *x0 = &b->fx[0];
  const tsr_scheme_plan *sp = &x0->scheme;
  for (int s = 0; s < sp->nstage; ++s) {
    for (int k = 0; k < na; ++k) {
      tsr_run_ctx *x = &b->fx[act[k]];
      b->in[k] = x->slot[sp->stage[s].in];
      b->out[k] = x->slot[sp->stage[s].out];
      b->base[k] = x->slot[TSR_SLOT_U];
      b->acc[k] = x->acc;
      b->src[k] = x->src;
    }
    TSR_CALL(tsr_bc_apply_cuda_batch(b->nface, b->faces, b->vals, na, b->in, TSR_BC_WHOLE,
                                     b->stream));
    tsr_stage_desc d = x0->desc;
    d.kind = sp->stage[s].kind;
    TSR_CALL(tsr_stage_cuda_batch(&d, &x0->interior, na, (const tsr_field *const *)b->in,
                                  b->base, x0->acc ? b->acc : NULL,
                                  x0->src ? (const tsr_field *const *)b->src : NULL, b->out,
                                  b->stream));
  }
  for (int k = 0; k < na; ++k) tsr_run_swap_slots(&b->fx[act[k]]);
  return TSR_OK;
}

static void drop_graph(tsr_pr_batch *b) {
  if (b->exec) {
    cudaStreamSynchronize(b->stream);
    cudaGraphExecDestroy(b->exec);
  }
  b->exec = NULL;
  b->ncap = 0;
}

/* BATCH_CHUNK steps of act[0 .. na) into b->exec, from the slots as they are (each context's
 * flip 0, so that the graph's slots are where the step's fields are at every launch). */
static tsr_err capture(tsr_pr_batch *b, int na, const int *act) {
  drop_graph(b);
  TSR_CUDA(cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeThreadLocal));
  tsr_err err = TSR_OK;
  int done = 0;
  for (; done < BATCH_CHUNK && !err; ++done) err = step(b, na, act);
  cudaGraph_t graph = NULL;
  cudaError_t ce = cudaStreamEndCapture(b->stream, &graph);
  if (!err && ce != cudaSuccess)
    err = tsr_cuda_fail((int)ce, "cudaStreamEndCapture", __FILE__, __LINE__);
  if (!err) {
    ce = cudaGraphInstantiate(&b->exec, graph, 0);
    if (ce != cudaSuccess) {
      b->exec = NULL;
      err = tsr_cuda_fail((int)ce, "cudaGraphInstantiate", __FILE__, __LINE__);
    }
  }
  if (graph) cudaGraphDestroy(graph);
  for (int k = 0; k < na; ++k) /* a capture that stopped half-way */
    if (b->fx[act[k]].flip) tsr_run_swap_slots(&b->fx[act[k]]);
  if (err) {
    (void)cudaGetLastError();
    return err;
  }
  memcpy(b->cap, act, sizeof *act * (size_t)na);
  b->ncap = na;
  return TSR_OK;
}

/* n steps of act[0 .. na), whose flips are 0: graph launches for whole chunks, plain steps
 * for the rest. */
static tsr_err advance(tsr_pr_batch *b, int na, const int *act, int64_t n) {
  int64_t done = 0;
  if (b->graphs && !b->warm && n >= BATCH_CHUNK + 2) {
    /* plain steps first, as solver/graph.h does: whatever a step sets up on first use is
     * then in place before a capture (two, so that the slots are back where they were) */
    TSR_CALL(step(b, na, act));
    TSR_CALL(step(b, na, act));
    done = 2;
    b->warm = 1;
  }
  if (b->graphs && b->warm && n - done >= BATCH_CHUNK) {
    if (b->ncap != na || memcmp(b->cap, act, sizeof *act * (size_t)na)) {
      tsr_err err = capture(b, na, act);
      if (err) {
        b->graphs = 0;
        fprintf(stderr, "tessera: warning: parareal: capturing batched steps into a CUDA graph "
                        "failed; plain launches from here: %s\n", tsr_err_message());
        tsr_err_clear();
      }
    }
    for (; b->exec && n - done >= BATCH_CHUNK; done += BATCH_CHUNK)
      TSR_CUDA(cudaGraphLaunch(b->exec, b->stream));
  }
  for (; done < n; ++done) TSR_CALL(step(b, na, act));
  return TSR_OK;
}

tsr_err tsr_pr_batch_solve(tsr_pr_batch *b, int na, const int *act, const int64_t *steps,
                           tsr_field *const *in, tsr_field *const *out) {
  if (na == 0) return TSR_OK;
  tsr_run_ctx *x0 = &b->fx[0];
  int64_t least = steps[0];
  for (int k = 0; k < na; ++k) {
    tsr_run_ctx *x = &b->fx[act[k]];
    if (x->flip) tsr_run_swap_slots(x); /* the slots' contents mean nothing yet */
    TSR_CALL(tsr_parareal_copy_cuda(x->slot[TSR_SLOT_U], in[k], b->stream));
    if (steps[k] < least) least = steps[k];
  }
  TSR_CALL(advance(b, na, act, least));
  /* unequal slices differ by a step: those that have more go on together (no step depends
   * on its time) */
  int *more = malloc(sizeof *more * (size_t)na);
  TSR_CHECK(more, TSR_ERR_MEMORY, "out of memory");
  tsr_err err = TSR_OK;
  for (int64_t s = least;; ++s) {
    int nm = 0;
    for (int k = 0; k < na; ++k)
      if (steps[k] > s) more[nm++] = act[k];
    if (!nm) break;
    if ((err = step(b, nm, more))) break;
  }
  free(more);
  TSR_CALL(err);
  for (int k = 0; k < na; ++k)
    TSR_CALL(tsr_parareal_copy_cuda(out[k], b->fx[act[k]].slot[TSR_SLOT_U], b->stream));
  return x0->be->sync(x0);
}

void tsr_pr_batch_destroy(tsr_pr_batch **bp) {
  if (!bp || !*bp) return;
  tsr_pr_batch *b = *bp;
  drop_graph(b);
  free(b->cap), free(b->in), free(b->out), free(b->acc), free(b->src), free(b->base);
  free(b);
  *bp = NULL;
}
