/* The PINN trainer as a method of the run driver (tsr_method_pinn, solver/method.h): set-up
 * (backend, decomposition, points, network), the start (restart, interface exchange), the loop
 * (train_loop.c), and the run's end (the profile, the error, the outputs). The pieces are
 * listed in solver/pinn/train_impl.h.
 *
 * On several ranks each rank trains the network of its own box (issue 18): the boxes are the
 * classical method's partition, the interface exchange runs inside every iteration of the
 * engine, and the ranks agree once per chunk (one MPI_Allgather of a few numbers per rank:
 * losses, error sums, mismatch, a non-finite flag), so every rank leaves the loop, checkpoints
 * and stops at the same iteration. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/device.h"
#include "solver/fault.h"
#include "solver/method.h"
#include "solver/run_internal.h"
#include "solver/watchdog.h"
#include "solver/pinn/pinn.h"
#include "solver/pinn/train_impl.h"

#ifdef TSR_HAVE_CUDA
tsr_err tsr_device_set_cuda(int device); /* solver/device_cuda.c */
#endif

/* The backend, and on GPUs this rank's GPU. With at most one rank per GPU on every node, local
 * rank r drives GPU r (tsr_device_select, as the explicit method does). With more ranks than
 * GPUs on a node, the ranks share the GPUs: local rank r takes GPU r mod (the node's GPUs), so
 * four subdomains run on two GPUs as two ranks a GPU (each network is small and each rank's
 * box is the decomposition); NCCL takes one rank per GPU, so such a run exchanges its interface
 * values over MPI through host memory (x->shared; solver/pinn/engine.h). Collective. */
static tsr_err choose_device(tsr_pinn_ctx *x, MPI_Comm comm) {
  tsr_backend want = x->opts.backend != TSR_BACKEND_AUTO ? x->opts.backend : x->c->backend;
  TSR_CALL(tsr_run_use_cuda(comm, want, &x->device));
  if (!x->device) return TSR_OK;
  int dev;
#ifdef TSR_HAVE_CUDA
  MPI_Comm node;
  int lr = 0, ls = 1, ngpu = 0;
  tsr_err err = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, x->rank, MPI_INFO_NULL, &node) ==
                        MPI_SUCCESS
                    ? TSR_OK
                    : tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__, "MPI_Comm_split_type(SHARED) "
                                  "failed: cannot tell which ranks share a node");
  if (!err) {
    MPI_Comm_rank(node, &lr);
    MPI_Comm_size(node, &ls);
    MPI_Comm_free(&node);
    err = tsr_device_count(&ngpu);
  }
  TSR_CALL(tsr_run_agree(comm, err));
  int per = ngpu > 0 ? (ls + ngpu - 1) / ngpu : ls;
  MPI_Allreduce(&per, &x->per_gpu, 1, MPI_INT, MPI_MAX, comm);
  x->shared = x->per_gpu > 1;
  if (x->shared) return tsr_run_agree(comm, tsr_device_set_cuda(lr % ngpu));
#endif
  return tsr_device_select(comm, &dev);
}

/* The ranks the watchdog names (solver/watchdog.h, comm.timeout): the interface neighbours,
 * where x->watched: on several CPU ranks that exchange every iteration (every iteration's
 * exchange is progress; the ranks of a causal run's later slabs wait whole chunks for the
 * earlier one, and the GPU path's host waits are not watched yet); else -1. */
static int watch_peers(const tsr_run_ctx *r, int *peers, int max) {
  const tsr_pinn_ctx *x = r->method;
  if (!x->watched) return -1;
  const tsr_pinn_peers *pe = &x->batch.peers;
  int n = 0;
  for (int i = 0; i < pe->npeer && n < max; ++i) {
    int seen = pe->peer[i] == x->rank;
    for (int k = 0; k < n && !seen; ++k) seen = peers[k] == pe->peer[i];
    if (!seen) peers[n++] = pe->peer[i];
  }
  return n;
}

/* --inject-fault in a PINN run (a first launch: a relaunch neither checks nor fires it): the
 * kinds that fire after an iteration, on a rank of the run, at an iteration of Adam's; corrupt
 * at one that writes a checkpoint; hang where the watchdog runs (peers). enospc and
 * graph need the explicit method's checkpoint writer and CUDA graphs, which the PINN's loop
 * does not have. */
static tsr_err check_fault(const tsr_pinn_ctx *x) {
  const tsr_fault *f = x->opts.fault;
  if (!f || f->kind == TSR_FAULT_NONE || !tsr_fault_armed()) return TSR_OK;
  TSR_CHECK(f->kind != TSR_FAULT_HANG || x->watched, TSR_ERR_INPUT, "--inject-fault: kind=hang "
            "with method pinn needs the watchdog, which watches %s; run it on several CPU "
            "ranks without pinn.slabs: causal, or use kind=exit",
            x->device ? "CPU ranks only in this version" : x->size == 1 ? "several ranks"
                                                                        : "slabs trained at once");
  TSR_CHECK(f->kind == TSR_FAULT_EXIT || f->kind == TSR_FAULT_CORRUPT ||
            f->kind == TSR_FAULT_HANG || f->kind == TSR_FAULT_SIGNAL ||
            f->kind == TSR_FAULT_SIGNAL2 || f->kind == TSR_FAULT_NAN, TSR_ERR_INPUT,
            "--inject-fault: kind=%s is not available with method pinn in this version (its loop "
            "has no asynchronous checkpoint writer or CUDA graph capture); use kind=exit, "
            "corrupt, hang, signal, signal2 or nan", tsr_fault_kind_name(f->kind));
  /* checkpoint_every counts iterations here ({time: T} is refused with method pinn) */
  const tsr_case_every *every = x->opts.write_output ? &x->c->output.checkpoint_every : NULL;
  return tsr_fault_check(f, x->size, x->total, every, 1.0);
}

/* The boxes of the ranks (several ranks): the classical method's partitioners. */
static tsr_err decompose(tsr_pinn_ctx *x) {
  const tsr_case *c = x->c;
  x->nslab = c->decomp.time_slices > 1 ? c->decomp.time_slices : 1;
  x->causal = x->nslab > 1 && c->pinn.causal;
  x->nspace = x->size / x->nslab;
  x->slab_len = c->pinn.iterations + c->pinn.lbfgs;
  x->total = x->slab_len * (x->causal ? x->nslab : 1);
  if (x->nslab > 1 && x->size % x->nslab) {
    char ok[160];
    int n = 0;
    for (int m = 1; m <= 4 && n < (int)sizeof ok; ++m)
      n += snprintf(ok + n, sizeof ok - n, "%s%d", m > 1 ? ", " : "", m * x->nslab);
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "%s: decomposition.time_slices: %d "
                       "time slabs need a rank count that is a multiple of %d (ranks form space "
                       "x time subdomains, slab-major), and this run has %d ranks; run on %s, ... "
                       "ranks, or change time_slices", c->path, x->nslab, x->nslab, x->size, ok);
  }
  if (x->size == 1) return TSR_OK;
  TSR_CALL(tsr_pinn_partition(c, x->nspace, &x->layout));
  int srank = x->rank % x->nspace, slab = x->rank / x->nspace;
  x->sub = (tsr_pinn_sub){.layout = &x->layout, .box = tsr_layout_box_of(&x->layout, srank)};
  if (x->nslab > 1) {
    x->sub.slab = slab;
    x->sub.nslab = x->nslab;
    x->sub.rank0 = slab * x->nspace;
    x->sub.causal = x->causal;
  }
  TSR_CHECK(x->sub.box >= 0, TSR_ERR_INTERNAL, "rank %d owns no box", x->rank);
  x->psub = &x->sub;
  return TSR_OK;
}

/* The interface exchange with the neighbours (several ranks): MPI on CPU ranks, NCCL on GPUs
 * (MPI where ranks share GPUs: choose_device). Collective. */
static tsr_err exchange(tsr_pinn_ctx *x) {
  if (x->size == 1) return TSR_OK;
  int nv = TSR_PINN_IFACE_NV * x->c->ncomp;
  tsr_err err = TSR_OK;
  /* causal slabs exchange in space only; the earlier slab's values come once (handoff) */
  tsr_pinn_peers pe = x->batch.peers;
  if (x->causal) pe.npeer = pe.nspace_peer;
  if (x->device && !x->shared) {
#ifdef TSR_HAVE_CUDA
    ncclComm_t nccl = NULL;
    err = tsr_nccl_create(x->comm, &nccl);
    x->nccl = nccl;
    if (!err) err = tsr_pinn_iface_create_nccl(nccl, &pe, nv, &x->xch);
#endif
  } else {
    err = tsr_pinn_iface_create_mpi(x->comm, &pe, nv, &x->xch);
  }
  if (!err) err = tsr_pinn_engine_set_interface(x->eng, x->batch.F, x->xch);
  return tsr_run_agree(x->comm, err);
}

static tsr_err setup(tsr_pinn_ctx *x, MPI_Comm comm) {
  const tsr_case *c = x->c;
  TSR_CALL(choose_device(x, comm));
  tsr_err err = decompose(x);
  if (!err) err = tsr_pinn_batch_build(c, x->psub, 0, &x->batch);
  TSR_CALL(tsr_run_agree(comm, err));
  tsr_pinn_engine_opts_of(c, x->psub, &x->batch, x->device, &x->eo);
  /* the ranks that train together, over which a GPU run agrees on capturing its iteration
   * with the exchange in it: every rank, or in a causal run the slab's */
  if (x->size > 1 && x->causal)
    TSR_CALL(tsr_run_agree(comm, MPI_Comm_split(comm, x->sub.slab, x->rank, &x->group) ==
                                         MPI_SUCCESS
                                     ? TSR_OK
                                     : tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__,
                                                   "MPI_Comm_split(slabs) failed")));
  if (x->size > 1) x->eo.comm = x->causal ? x->group : comm;
  x->shape = x->eo.shape;
  x->nparam = tsr_net_nparam(&x->shape);
  err = tsr_pinn_error_points(x);
  double lo[3], hi[3];
  tsr_box b = tsr_pinn_sub_box(c, x->psub, lo, hi);
  int64_t ng = 1;
  for (int a = 0; a < c->dim; ++a) ng *= tsr_box_len(&b, a);
  int64_t cap = x->ne > ng ? x->ne : ng;
  x->eo.eval_cap = (int)(cap < 65536 ? cap : 65536);
  if (!err) err = tsr_pinn_engine_create(&x->eo, &x->eng);
  double *theta = err ? NULL : malloc(x->nparam * sizeof *theta);
  if (!err && !theta)
    err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory for %zu parameters",
                      x->nparam);
  /* every rank's network starts from the case's seed (each normalises over its own box) */
  if (!err) tsr_net_init(&x->shape, c->pinn.seed, theta);
  if (!err) err = tsr_pinn_engine_set_state(x->eng, theta, NULL, NULL, 0);
  free(theta);
  TSR_CALL(tsr_run_agree(comm, err));
  x->watched = x->size > 1 && !x->device && !x->causal;
  return tsr_run_agree(comm, check_fault(x));
}

/* The network's state from the checkpoint (parameters, moments, history, L-BFGS's state) or
 * as set up; the interface exchange; the batch of the first iteration. */
static tsr_err start(tsr_pinn_ctx *x) {
  MPI_Comm comm = x->comm;
  if (x->opts.restart) {
    TSR_CALL(tsr_pinn_restart(x));
    /* before anything takes its iteration (the draw, the slab) */
    TSR_CALL(tsr_pinn_check_restart_phase(x));
  }
  TSR_CALL(exchange(x));
  /* NCCL connects a pair of ranks at their first send and receive (1.1-1.3 s on 2 H200s,
   * bench/README.md, pinn_scaling): one exchange here keeps that out of the training clock.
   * It only receives into the neighbours' own segments, which every iteration's exchange
   * fills again before its loss reads them, so training keeps its bits */
  if (x->device && x->size > 1)
    TSR_CALL(tsr_run_agree(comm, tsr_pinn_engine_exchange(x->eng, NULL, NULL)));
  TSR_CALL(tsr_run_agree(comm, tsr_pinn_set_draw(x, tsr_pinn_draw_at(x, x->it0))));
  /* a causal run restarted inside slab k > 0: its slab face values again, from the finished
   * slab's restored network (the same bits as the handoff at its start); at the start of slab
   * k the loop hands off */
  int a = tsr_pinn_active_slab(x, x->it0);
  if (a > 0 && x->it0 < x->total && x->it0 % x->slab_len) TSR_CALL(tsr_pinn_handoff(x, a, 0));
  return TSR_OK;
}

static tsr_err profile(tsr_pinn_ctx *x) {
  const char *env = getenv("TSR_PINN_PROFILE");
  x->prof_n = env ? atoi(env) : 0;
  if (x->prof_n <= 0) return TSR_OK;
  double *st = malloc(3 * x->nparam * sizeof *st);
  TSR_CHECK(st, TSR_ERR_MEMORY, "out of memory");
  int64_t it = tsr_pinn_local_it(x, x->total);
  /* the phases of each rank's own iteration; with an exchange, the exchange alone before each
   * (every rank profiles as many iterations: the neighbours' calls match) */
  tsr_err err = tsr_pinn_engine_get_state(x->eng, st, st + x->nparam, st + 2 * x->nparam);
  if (!err) err = tsr_pinn_engine_profile(x->eng, x->prof_n, x->prof);
  if (!err) err = tsr_pinn_engine_set_state(x->eng, st, st + x->nparam, st + 2 * x->nparam, it);
  free(st);
  return tsr_run_agree(x->comm, err);
}

/* This rank's figures for report.json's subdomains, gathered on rank 0 (*all: size of them,
 * new, on rank 0). Collective. */
static tsr_err gather_subdomains(tsr_pinn_ctx *x, tsr_pinn_subdomain **all) {
  tsr_pinn_subdomain me;
  memset(&me, 0, sizeof me);
  me.nterm = x->batch.nterm;
  me.npts = x->batch.npts;
  for (int a = 0; a < 3; ++a) {
    me.box[a] = x->batch.box.lo[a];
    me.box[3 + a] = x->batch.box.hi[a];
  }
  for (int k = 0; k < me.nterm; ++k) {
    me.loss[k] = x->last_terms[k];
    me.count[k] = x->batch.term[k].count;
    memcpy(me.name[k], x->batch.name[k], sizeof me.name[k]);
  }
  me.slab = x->nslab > 1 ? x->sub.slab : 0;
  me.t0 = x->batch.t0;
  me.t1 = x->batch.t1;
  tsr_err err = tsr_pinn_engine_mismatch(x->eng, &me.mismatch);
  *all = x->rank == 0 ? calloc((size_t)x->size, sizeof **all) : NULL;
  if (!err && x->rank == 0 && !*all)
    err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory");
  TSR_CALL(tsr_run_agree(x->comm, err));
  MPI_Gather(&me, (int)sizeof me, MPI_BYTE, *all, (int)sizeof me, MPI_BYTE, 0, x->comm);
  return TSR_OK;
}

/* ---- the method (solver/method.h): x->method is the trainer's state ----------------------- */

static tsr_err pinn_setup(tsr_run_ctx *r) {
  tsr_pinn_ctx *x = calloc(1, sizeof *x);
  TSR_CHECK(x, TSR_ERR_MEMORY, "out of memory");
  r->method = x;
  *x = (tsr_pinn_ctx){.c = r->c, .opts = r->opts, .comm = r->comm, .rank = r->rank,
                      .size = r->size, .out_dir = r->out_dir, .group = MPI_COMM_NULL,
                      .lb_phase = -1, .lb_start = -1};
  return setup(x, r->comm);
}

static tsr_err pinn_start(tsr_run_ctx *r) {
  tsr_pinn_ctx *x = r->method;
  double t0 = MPI_Wtime();
  x->opts.restart = r->opts.restart; /* the driver's choice: a relaunch may start over */
  tsr_err err = start(x);
  x->setup_s = r->phase[PH_SETUP] + (MPI_Wtime() - t0);
  return err;
}

/* Training, then the error against exact (res->rel_l2); what was trained stays on disk (the
 * history) also when the loss blew up or a signal came. */
static tsr_err pinn_advance(tsr_run_ctx *r, tsr_run_result *res) {
  tsr_pinn_ctx *x = r->method;
  res->pinn = 1;
  res->rel_l2 = NAN;
  tsr_err err = tsr_pinn_loop(x, res);
  tsr_watchdog_stop(); /* it watches the training loop, where the ranks exchange */
  res->wall = x->run_s;
  res->first_step = x->it0;
  if (!err && !res->stopped) err = profile(x);
  if (!err) err = tsr_pinn_error(x, &res->rel_l2);
  if ((err || res->stopped) && x->opts.write_output && x->nrow && x->eng) {
    tsr_err e2 = x->rank == 0 ? tsr_pinn_write_history(x) : TSR_OK;
    if (!err) err = tsr_run_agree(x->comm, e2);
  }
  return err;
}

/* final.h5 and the fields sampled on the grid, snapshots, history.csv, report.json. */
static tsr_err pinn_finish(tsr_run_ctx *r, tsr_run_result *res) {
  tsr_pinn_ctx *x = r->method;
  if (!x->nrow) return TSR_OK;
  TSR_CALL(gather_subdomains(x, &x->subs));
  return tsr_pinn_write_outputs(x, res);
}

static void pinn_teardown(tsr_run_ctx *r) {
  tsr_pinn_ctx *x = r->method;
  if (!x) return;
  tsr_pinn_iface_destroy(&x->xch);
  tsr_pinn_engine_destroy(&x->eng);
#ifdef TSR_HAVE_CUDA
  if (x->nccl) {
    ncclComm_t n = x->nccl;
    tsr_nccl_destroy(&n);
  }
#endif
  if (x->group != MPI_COMM_NULL) MPI_Comm_free(&x->group);
  tsr_pinn_batch_free(&x->batch);
  tsr_layout_free(&x->layout);
  free(x->subs);
  free(x->Xe);
  free(x->ue);
  free(x->lb_state);
  free(x->hist);
  free(x);
  r->method = NULL;
}

const tsr_method_ops tsr_method_pinn = {
    .setup = pinn_setup,
    .peers = watch_peers,
    .start = pinn_start,
    .advance = pinn_advance,
    .finish = pinn_finish,
    .teardown = pinn_teardown,
};
