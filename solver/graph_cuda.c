/* CUDA graphs of whole steps (solver/graph.h). */
#include "solver/graph.h"

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/cuda_util.h"
#include "kernels/step_time.h"
#include "solver/backend.h"
#include "solver/fault.h"
#include "solver/run_internal.h"

#define TIMING_RING 64

/* One graph per slot parity and, with time.fuse, per place of the step in its block (whose
 * stages update regions of their own and exchange at the block's first stage only). */
#define NEXEC (2 * TSR_MAX_FUSE)

struct tsr_graph {
  cudaStream_t stream;     /* the backend's compute stream */
  cudaGraphExec_t exec[NEXEC]; /* exec[2 * pos + p]: step pos of a whole fused block (0 without
                              fusion) from base + p (mod 2), slots as they were then */
  int ncap;                /* graphs captured so far */
  int64_t base;            /* the first step captured */
  int plain_done;          /* the run's first step was issued plainly */
  int fallback;            /* capture failed: plain launches from then on */
  int64_t replays;         /* steps issued as graph launches */
  int64_t *dstep;          /* device: the step the next launch computes the times of */
  double *dtimes;          /* device: the stage times of the step running */
  int64_t dstep_next;      /* what *dstep holds once the work issued so far has run; -1: unknown */
  int nccl_version;        /* ncclGetVersion's code */
  int timed;               /* some boundary value or source depends on t: the graphs need the
                              stage times (else their first kernel is left out) */
  tsr_step_time_coef coef;
  double dt;
  /* opts.graph_timing: events around each launch, in a ring that the host reads a lap later */
  int timing;
  cudaEvent_t ev[TIMING_RING][2];
  int64_t nev;             /* launches with events so far */
  double busy;             /* seconds between the events read so far */
};

tsr_err tsr_graph_create(tsr_run_ctx *x, tsr_graph **gp) {
  *gp = NULL;
  if (x->be != &tsr_backend_cuda || x->c->gpu.graphs == TSR_GRAPHS_OFF) return TSR_OK;
  /* auto: one rank only. On several GPUs captures with the NCCL exchange in them give the
   * bits of plain launches (gpu_graphs_np2) and a hung rank still ends the job
   * (gpu_faults_np2), but the one measurement there (512^3 per GPU, bench/README.md) showed
   * no gain; `on` takes them. */
  if (x->c->gpu.graphs == TSR_GRAPHS_AUTO && x->size > 1) return TSR_OK;
  TSR_CHECK(x->scheme.nstage >= 1 && x->scheme.nstage <= TSR_STEP_TIME_MAX, TSR_ERR_INTERNAL,
            "a scheme of %d stages; CUDA graphs handle 1 to %d", x->scheme.nstage,
            TSR_STEP_TIME_MAX);
  tsr_graph *g;
  TSR_ALLOC(g, 1, "the CUDA graphs of a step");
  *gp = g;
  g->stream = tsr_backend_cuda_stream(x);
  g->dstep_next = -1;
  g->dt = x->dt;
  g->timed = tsr_run_timed(x);
  g->coef.n = x->scheme.nstage;
  for (int s = 0; s < x->scheme.nstage; ++s) g->coef.c[s] = x->scheme.stage[s].c;
  TSR_CUDA(cudaMalloc((void **)&g->dstep, sizeof *g->dstep));
  TSR_CUDA(cudaMalloc((void **)&g->dtimes, TSR_STEP_TIME_MAX * sizeof *g->dtimes));
  g->timing = x->opts.graph_timing;
  for (int k = 0; g->timing && k < TIMING_RING; ++k)
    for (int e = 0; e < 2; ++e) TSR_CUDA(cudaEventCreate(&g->ev[k][e]));
  TSR_NCCL(ncclGetVersion(&g->nccl_version));
  return TSR_OK;
}

/* After a capture, whatever it left in the host's caches is the captured step's; the plain
 * steps after a fallback must evaluate time-dependent values again. */
static void forget_timed(tsr_run_ctx *x) {
  tsr_backend_cuda_forget_timed(x);
  if (x->src_timed) x->src_valid = 0;
}

/* Captures the step from t into a graph and instantiates it. On failure the stream has left
 * capture and nothing of the step ran. */
static tsr_err capture(tsr_graph *g, tsr_run_ctx *x, int64_t step, double t,
                       tsr_graph_step_fn fn, cudaGraphExec_t *exec) {
  *exec = NULL;
  /* NCCL captures its calls into graphs from 2.9 on; before, capture fails with a less
   * telling error (codes before 2.9 read 1000 * major + 100 * minor + patch) */
  const int v = g->nccl_version;
  TSR_CHECK(v >= 20900, TSR_ERR_UNSUPPORTED,
            "this NCCL (%d.%d) cannot be captured into CUDA graphs (2.9 or newer can)",
            v / 1000, v / 100 % 10);
  forget_timed(x);
  /* this thread's own calls are checked; the checkpoint writer's thread may go on */
  TSR_CUDA(cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal));
  tsr_err err = TSR_OK;
  if (g->timed) {
    err = tsr_step_time_cuda(g->dstep, &g->coef, g->dt, g->dtimes, g->stream);
    x->tdev = g->dtimes;
  }
  if (!err) err = fn(x, t);
  x->tdev = NULL;
  if (!err && tsr_fault_graph_due(x->opts.fault, x->rank, step + 1))
    err = tsr_err_set(TSR_ERR_CUDA, __FILE__, __LINE__,
                      "--inject-fault (testing aid): rank %d fails to capture the step to %lld",
                      x->rank, (long long)(step + 1));
  cudaGraph_t graph = NULL;
  cudaError_t ce = cudaStreamEndCapture(g->stream, &graph);
  if (!err && ce != cudaSuccess)
    err = tsr_cuda_fail((int)ce, "cudaStreamEndCapture", __FILE__, __LINE__);
  if (!err) {
    /* the pack and unpack kernels keep the comm stream's high priority (captured per kernel
     * node), else every node would run at the compute stream's */
    ce = cudaGraphInstantiate(exec, graph, cudaGraphInstantiateFlagUseNodePriority);
    if (ce != cudaSuccess) {
      *exec = NULL;
      err = tsr_cuda_fail((int)ce, "cudaGraphInstantiate", __FILE__, __LINE__);
    }
  }
  if (graph) cudaGraphDestroy(graph);
  forget_timed(x);
  if (err) {
    (void)cudaGetLastError(); /* a failed capture's error is not the next launch's */
    tsr_halo_forget(x->halo);
  }
  return err;
}

static void drop_graphs(tsr_graph *g) {
  for (int p = 0; p < NEXEC; ++p) {
    if (g->exec[p]) cudaGraphExecDestroy(g->exec[p]);
    g->exec[p] = NULL;
  }
  g->ncap = 0;
}

/* Adds the time between a pair of events recorded a lap ago (waiting for them: a benchmark's
 * host runs at most a lap ahead). */
static tsr_err read_events(tsr_graph *g, cudaEvent_t *ev) {
  float ms = 0.0f;
  TSR_CUDA(cudaEventSynchronize(ev[1]));
  TSR_CUDA(cudaEventElapsedTime(&ms, ev[0], ev[1]));
  g->busy += 1e-3 * ms;
  return TSR_OK;
}

tsr_err tsr_graph_step(tsr_graph *g, tsr_run_ctx *x, int64_t step, double t,
                       tsr_graph_step_fn fn) {
  /* a fused block cut short (the run's end, a rebalancing decision) has regions of its own */
  const int cut = x->fuse > 1 && x->fuse_len != x->fuse;
  if (!g || g->fallback || !g->plain_done || cut) {
    if (g) g->plain_done = 1;
    return fn(x, t);
  }
  if (g->ncap == 0) g->base = step;
  const int p = (x->fuse > 1 ? 2 * x->fuse_pos : 0) + (int)((step - g->base) & 1);
  if (!g->exec[p]) {
    /* the step's kernels were not issued, only recorded: a failure here leaves the step to
     * issue plainly, on every rank alike (the NCCL calls of the ranks must match) */
    cudaGraphExec_t exec = NULL;
    tsr_err err = tsr_run_agree(x->comm, capture(g, x, step, t, fn, &exec));
    if (err) {
      if (exec) cudaGraphExecDestroy(exec);
      drop_graphs(g);
      g->fallback = 1;
      if (x->rank == 0)
        fprintf(stderr, "tessera: warning: gpu.graphs: capturing a step into a CUDA graph "
                        "failed; running with plain launches (set gpu.graphs: off to skip the "
                        "attempt): %s\n", tsr_err_message());
      return fn(x, t);
    }
    g->exec[p] = exec;
    g->ncap++;
  }
  double t0 = MPI_Wtime();
  if (g->timed && g->dstep_next != step)
    TSR_CALL(tsr_step_time_set_cuda(g->dstep, step, g->stream));
  cudaEvent_t *ev = g->timing ? g->ev[g->nev % TIMING_RING] : NULL;
  if (ev && g->nev >= TIMING_RING) TSR_CALL(read_events(g, ev));
  if (ev) TSR_CUDA(cudaEventRecord(ev[0], g->stream));
  TSR_CUDA(cudaGraphLaunch(g->exec[p], g->stream));
  if (ev) {
    TSR_CUDA(cudaEventRecord(ev[1], g->stream));
    g->nev++;
  }
  g->dstep_next = step + 1;
  g->replays++;
  x->phase[PH_COMPUTE] += MPI_Wtime() - t0;
  return TSR_OK;
}

tsr_err tsr_graph_finish(tsr_graph *g, tsr_run_result *res) {
  res->graph_steps = g ? g->replays : 0;
  res->graph_gpu_time = 0.0;
  if (!g || !g->timing) return TSR_OK;
  int64_t first = g->nev > TIMING_RING ? g->nev - TIMING_RING : 0;
  for (int64_t k = first; k < g->nev; ++k) TSR_CALL(read_events(g, g->ev[k % TIMING_RING]));
  g->nev = 0;
  res->graph_gpu_time = g->busy;
  return TSR_OK;
}

const char *tsr_graph_mode(const tsr_graph *g, int64_t *replays) {
  *replays = g ? g->replays : 0;
  if (!g) return "off";
  if (g->fallback) return "fallback";
  return g->replays > 0 ? "on" : "off";
}

void tsr_graph_destroy(tsr_graph **gp) {
  if (!gp || !*gp) return;
  tsr_graph *g = *gp;
  /* launches still running use the graphs and the step counter */
  if (g->stream) cudaStreamSynchronize(g->stream);
  drop_graphs(g);
  for (int k = 0; g->timing && k < TIMING_RING; ++k)
    for (int e = 0; e < 2; ++e)
      if (g->ev[k][e]) cudaEventDestroy(g->ev[k][e]);
  if (g->dstep) cudaFree(g->dstep);
  if (g->dtimes) cudaFree(g->dtimes);
  free(g);
  *gp = NULL;
}
