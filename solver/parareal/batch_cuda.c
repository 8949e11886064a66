/* Batched fine solves for parareal's slices sharing one GPU (batch.h). */
#include "solver/parareal/batch.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/block_steps.h"
#include "kernels/boundary.h"
#include "kernels/cuda_util.h"
#include "kernels/stage.h"
#include "solver/backend.h"
#include "solver/parareal/coarse.h"
#include "solver/parareal/ops.h"
#include "solver/explicit.h"
#include "solver/run_internal.h"

/* Steps per graph launch: an even number (each context's slots are back where they were
 * after it), enough that a launch's host cost is small against the GPU time of that many
 * batched steps. */
#define BATCH_CHUNK 32

/* A launch group's CUDA graph: BATCH_CHUNK steps of the contexts cap[0 .. ncap). */
typedef struct {
  cudaGraphExec_t exec;
  int *cap, ncap;
} batch_graph;

struct tsr_pr_batch {
  tsr_run_ctx *fx;
  int n;
  int group;                      /* slices a launch group takes (batch.h) */
  cudaStream_t stream;            /* fx[0]'s compute stream */
  const tsr_bc_face *faces[TSR_BC_MAX_FACES];
  const double *vals[TSR_BC_MAX_FACES];
  int nface;
  int graphs;                     /* gpu.graphs is not off, and no capture failed */
  int warm;                       /* plain steps ran before the first capture */
  int block;                      /* a slice's steps in one launch (kernels/block_steps.h) */
  tsr_block_job *jobs;            /* block: the slices of one solve */
  tsr_block_shape shape;          /* block: how the last solve ran */
  batch_graph *gr;                /* one a launch group: (n + group - 1) / group */
  int *more;                      /* the contexts of a group with a step more */
  /* one stage's field tables */
  tsr_field **in, **out, **acc, **src;
  const tsr_field **base;
};

/* Bytes of the fields a step of x touches: the scheme's slots, RK4's accumulator, the source. */
static size_t slice_bytes(const tsr_run_ctx *x) {
  const tsr_scheme_plan *sp = &x->scheme;
  int used[TSR_NSLOT] = {0};
  used[TSR_SLOT_U] = 1;
  for (int s = 0; s < sp->nstage; ++s) used[sp->stage[s].in] = used[sp->stage[s].out] = 1;
  size_t b = 0;
  for (int k = 0; k < TSR_NSLOT; ++k)
    if (used[k] && x->slot[k]) b += tsr_field_bytes(x->slot[k]);
  if (sp->uses_acc && x->acc) b += tsr_field_bytes(x->acc);
  if (x->src) b += tsr_field_bytes(x->src);
  return b;
}

tsr_err tsr_pr_batch_create(tsr_run_ctx *fx, int n, tsr_pr_batch **bp) {
  *bp = NULL;
  int on, group, mode;
  TSR_CALL(tsr_pr_batch_env(getenv("TESSERA_PARAREAL_BATCH"), &on, &group));
  TSR_CALL(tsr_pr_block_mode("TESSERA_PARAREAL_FINE_BLOCK", &mode));
  if (n < 2 || fx[0].be != &tsr_backend_cuda || fx[0].size != 1 || !on) return TSR_OK;
  for (int i = 0; i < n; ++i) {
    tsr_run_ctx *x = &fx[i];
    if (x->c->method != TSR_METHOD_EXPLICIT || x->nshell != 0 || x->rb || tsr_run_timed(x) ||
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
  if (!group) {
    int dev = 0, l2 = 0;
    TSR_CUDA(cudaGetDevice(&dev));
    TSR_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    group = tsr_pr_batch_group(n, slice_bytes(&fx[0]), (size_t)l2);
  }
  b->group = group < n ? group : n;
  TSR_ALLOC(b->gr, (size_t)((n + b->group - 1) / b->group), "parareal's batches");
  for (int g = 0; g < (n + b->group - 1) / b->group; ++g)
    TSR_ALLOC(b->gr[g].cap, (size_t)b->group, "parareal's batches");
  TSR_ALLOC(b->more, (size_t)n, "parareal's batches");
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
  /* a slice's whole solve in one launch, its fields in shared memory, where they fit (the
   * coarse steps' kernel: a cluster a slice, all slices side by side) */
  const tsr_block_scheme sc = tsr_pr_block_scheme(&fx[0]);
  if (mode && fx[0].radius == 1 && fx[0].fuse <= 1 && fx[0].c->ncomp <= 2 &&
      (mode == 2 || tsr_block_steps_staged(&sc, fx[0].slot, tsr_pr_block_acc(&fx[0])))) {
    b->block = 1;
    TSR_ALLOC(b->jobs, (size_t)n, "parareal's batches");
  }
  return TSR_OK;
}

int tsr_pr_batch_block(const tsr_pr_batch *b) { return b && b->block; }

tsr_block_shape tsr_pr_batch_block_shape(const tsr_pr_batch *b) {
  return b && b->block ? b->shape : (tsr_block_shape){0, 0, 0};
}

/* Every slice's steps in one launch of block steps: slice act[k] steps[k] steps from its slot
 * U; the slots swap as the steps do. */
static tsr_err solve_block(tsr_pr_batch *b, int na, const int *act, const int64_t *steps) {
  tsr_run_ctx *x0 = &b->fx[0];
  const tsr_block_scheme sc = tsr_pr_block_scheme(x0);
  for (int k = 0; k < na; ++k) {
    tsr_run_ctx *x = &b->fx[act[k]];
    b->jobs[k] = (tsr_block_job){{x->slot[0], x->slot[1], x->slot[2]}, tsr_pr_block_acc(x),
                                 x->src, steps[k]};
  }
  TSR_CALL(tsr_block_steps_cuda_batch(&x0->desc, &sc, na, b->jobs, b->nface, b->faces, b->vals,
                                      b->stream, &b->shape));
  for (int k = 0; k < na; ++k)
    if (steps[k] % 2) tsr_explicit_swap_slots(&b->fx[act[k]]);
  return TSR_OK;
}

/* One step of the contexts act[0 .. na), stage by stage as tsr_explicit_advance issues them on one
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
  for (int k = 0; k < na; ++k) tsr_explicit_swap_slots(&b->fx[act[k]]);
  return TSR_OK;
}

static void drop_graph(tsr_pr_batch *b, batch_graph *g) {
  if (g->exec) {
    cudaStreamSynchronize(b->stream);
    cudaGraphExecDestroy(g->exec);
  }
  g->exec = NULL;
  g->ncap = 0;
}

/* BATCH_CHUNK steps of act[0 .. na) into g->exec, from the slots as they are (each context's
 * flip 0, so that the graph's slots are where the step's fields are at every launch). */
static tsr_err capture(tsr_pr_batch *b, batch_graph *g, int na, const int *act) {
  drop_graph(b, g);
  TSR_CUDA(cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeThreadLocal));
  tsr_err err = TSR_OK;
  int done = 0;
  for (; done < BATCH_CHUNK && !err; ++done) err = step(b, na, act);
  cudaGraph_t graph = NULL;
  cudaError_t ce = cudaStreamEndCapture(b->stream, &graph);
  if (!err && ce != cudaSuccess)
    err = tsr_cuda_fail((int)ce, "cudaStreamEndCapture", __FILE__, __LINE__);
  if (!err) {
    ce = cudaGraphInstantiate(&g->exec, graph, 0);
    if (ce != cudaSuccess) {
      g->exec = NULL;
      err = tsr_cuda_fail((int)ce, "cudaGraphInstantiate", __FILE__, __LINE__);
    }
  }
  if (graph) cudaGraphDestroy(graph);
  for (int k = 0; k < na; ++k) /* a capture that stopped half-way */
    if (b->fx[act[k]].flip) tsr_explicit_swap_slots(&b->fx[act[k]]);
  if (err) {
    (void)cudaGetLastError();
    return err;
  }
  memcpy(g->cap, act, sizeof *act * (size_t)na);
  g->ncap = na;
  return TSR_OK;
}

/* n steps of act[0 .. na), whose flips are 0, with launch group g's graph: graph launches for
 * whole chunks, plain steps for the rest. */
static tsr_err advance(tsr_pr_batch *b, batch_graph *g, int na, const int *act, int64_t n) {
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
    if (g->ncap != na || memcmp(g->cap, act, sizeof *act * (size_t)na)) {
      tsr_err err = capture(b, g, na, act);
      if (err) {
        b->graphs = 0;
        fprintf(stderr, "tessera: warning: parareal: capturing batched steps into a CUDA graph "
                        "failed; plain launches from here: %s\n", tsr_err_message());
        tsr_err_clear();
      }
    }
    for (; g->exec && n - done >= BATCH_CHUNK; done += BATCH_CHUNK)
      TSR_CUDA(cudaGraphLaunch(g->exec, b->stream));
  }
  for (; done < n; ++done) TSR_CALL(step(b, na, act));
  return TSR_OK;
}

/* Every step of the launch group act[0 .. na) (steps[k] for act[k]), with graph g. */
static tsr_err solve_group(tsr_pr_batch *b, batch_graph *g, int na, const int *act,
                           const int64_t *steps) {
  int64_t least = steps[0];
  for (int k = 0; k < na; ++k)
    if (steps[k] < least) least = steps[k];
  TSR_CALL(advance(b, g, na, act, least));
  /* unequal slices differ by a step: those that have more go on together (no step depends
   * on its time) */
  for (int64_t s = least;; ++s) {
    int nm = 0;
    for (int k = 0; k < na; ++k)
      if (steps[k] > s) b->more[nm++] = act[k];
    if (!nm) return TSR_OK;
    TSR_CALL(step(b, nm, b->more));
  }
}

tsr_err tsr_pr_batch_solve(tsr_pr_batch *b, int na, const int *act, const int64_t *steps,
                           tsr_field *const *in, tsr_field *const *out) {
  if (na == 0) return TSR_OK;
  tsr_run_ctx *x0 = &b->fx[0];
  for (int k = 0; k < na; ++k) {
    tsr_run_ctx *x = &b->fx[act[k]];
    if (x->flip) tsr_explicit_swap_slots(x); /* the slots' contents mean nothing yet */
    TSR_CALL(tsr_parareal_copy_cuda(x->slot[TSR_SLOT_U], in[k], b->stream));
  }
  if (b->block) {
    TSR_CALL(solve_block(b, na, act, steps));
    for (int k = 0; k < na; ++k)
      TSR_CALL(tsr_parareal_copy_cuda(out[k], b->fx[act[k]].slot[TSR_SLOT_U], b->stream));
    return x0->be->sync(x0);
  }
  /* a group's fields stay in L2 from one of its steps to the next; the stream orders the
   * groups. Groups go by slice index (group g: contexts g group .. (g + 1) group - 1), so
   * that a slice turning exact changes only its own group's graph, not every later one's */
  for (int k0 = 0, k1; k0 < na; k0 = k1) {
    const int g = act[k0] / b->group;
    for (k1 = k0 + 1; k1 < na && act[k1] / b->group == g;) ++k1;
    TSR_CALL(solve_group(b, &b->gr[g], k1 - k0, act + k0, steps + k0));
  }
  for (int k = 0; k < na; ++k)
    TSR_CALL(tsr_parareal_copy_cuda(out[k], b->fx[act[k]].slot[TSR_SLOT_U], b->stream));
  return x0->be->sync(x0);
}

int tsr_pr_batch_group_of(const tsr_pr_batch *b) { return b ? b->group : 0; }

void tsr_pr_batch_destroy(tsr_pr_batch **bp) {
  if (!bp || !*bp) return;
  tsr_pr_batch *b = *bp;
  for (int g = 0; b->gr && g < (b->n + b->group - 1) / b->group; ++g) {
    drop_graph(b, &b->gr[g]);
    free(b->gr[g].cap);
  }
  free(b->gr), free(b->more), free(b->in), free(b->out), free(b->acc), free(b->src), free(b->base);
  free(b->jobs);
  free(b);
  *bp = NULL;
}
