/* Where the run's iterations go: Adam's and L-BFGS's phases, a causal run's slabs (which one
 * trains, how far each rank's network is), the draws of random points, and the handoff from one
 * causal slab to the next. */
#include <stdlib.h>
#include <string.h>

#include "solver/pinn/train_impl.h"

/* The phase iteration it (the next to run, < x->total) is in. */
tsr_pinn_phase tsr_pinn_phase_at(const tsr_pinn_ctx *x, int64_t it) {
  int64_t I = x->c->pinn.iterations, base = 0;
  if (x->causal) {
    int64_t k = it / x->slab_len;
    base = (k < x->nslab ? k : x->nslab - 1) * x->slab_len;
  }
  if (it - base < I) return (tsr_pinn_phase){0, base, base + I};
  return (tsr_pinn_phase){1, base + I, base + x->slab_len};
}

/* The draw of random interior points at iteration it: L-BFGS keeps its phase's first (its line
 * search needs one objective). */
uint64_t tsr_pinn_draw_at(const tsr_pinn_ctx *x, int64_t it) {
  int64_t re = x->c->pinn.resample_every;
  if (!re) return 0;
  tsr_pinn_phase p = tsr_pinn_phase_at(x, it < x->total ? it : x->total - 1);
  return (uint64_t)((p.lbfgs ? p.start : it) / re);
}

/* The Adam iterations this rank's network has done at the run's iteration it: it (at most
 * pinn.adam.iterations, I), or in a causal run its slab's share of it (0 before its slab, I
 * after its Adam phase). */
int64_t tsr_pinn_local_it(const tsr_pinn_ctx *x, int64_t it) {
  int64_t I = x->c->pinn.iterations, l = x->causal ? it - (int64_t)x->sub.slab * x->slab_len : it;
  return l < 0 ? 0 : l > I ? I : l;
}

/* The slab training at iteration it of a causal run (it < total), -1 without. */
int tsr_pinn_active_slab(const tsr_pinn_ctx *x, int64_t it) {
  if (!x->causal) return -1;
  int64_t k = it / x->slab_len;
  return (int)(k < x->nslab ? k : x->nslab - 1);
}

/* Whether this rank trains at iteration it: every rank, or in a causal run the slab's. */
int tsr_pinn_trains(const tsr_pinn_ctx *x, int64_t it) {
  return !x->causal || tsr_pinn_active_slab(x, it) == x->sub.slab;
}

/* The batch of draw k (resampled interior points) into the engine. */
tsr_err tsr_pinn_set_draw(tsr_pinn_ctx *x, uint64_t k) {
  if (k == x->draw && x->batch.X) return tsr_pinn_engine_set_batch(x->eng, x->batch.X, x->batch.T);
  tsr_pinn_batch_free(&x->batch);
  TSR_CALL(tsr_pinn_batch_build(x->c, x->psub, k, &x->batch));
  x->draw = k;
  return tsr_pinn_engine_set_batch(x->eng, x->batch.X, x->batch.T);
}

/* A causal run's handoff to slab k (> 0): each rank of slab k - 1 evaluates its network at
 * its box's cell centres at the slab face t_k and sends them to the rank of the same box in
 * slab k, which holds them as the targets of its term `slab initial` (the neighbours' values
 * of its slab face points); with transfer (slab k starts here) also its parameters, from
 * which slab k starts (Adam's moments zero, its iteration 0). Collective. */
tsr_err tsr_pinn_handoff(tsr_pinn_ctx *x, int k, int transfer) {
  const tsr_case *c = x->c;
  int slab = x->sub.slab, nc = c->ncomp, nv = TSR_PINN_IFACE_NV * nc;
  size_t np = x->nparam;
  tsr_err err = TSR_OK;
  if (slab == k - 1) {
    double *X = NULL, *u = NULL, *th = NULL, t0, t1;
    int64_t n = 0;
    tsr_pinn_slab_span(c, x->psub, &t0, &t1);
    err = tsr_pinn_grid_points(c, x->psub, t1, &X, &n);
    u = malloc((size_t)(n ? n : 1) * nc * sizeof *u);
    th = malloc(3 * np * sizeof *th);
    if (!err && (!u || !th))
      err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory for a slab handoff");
    for (int64_t p0 = 0; p0 < n && !err; p0 += x->eo.eval_cap) {
      int m = (int)(n - p0 < x->eo.eval_cap ? n - p0 : x->eo.eval_cap);
      err = tsr_pinn_engine_eval(x->eng, X + (size_t)x->batch.nin * p0, m, u + p0 * nc);
    }
    if (!err && transfer) err = tsr_pinn_engine_get_state(x->eng, th, th + np, th + 2 * np);
    /* sent also after a failure (the receiver waits for it); the error is agreed below */
    MPI_Send(u ? u : th, u ? (int)(n * nc) : 0, MPI_DOUBLE, x->rank + x->nspace, 0x534c,
             x->comm);
    if (transfer) MPI_Send(th, th ? (int)np : 0, MPI_DOUBLE, x->rank + x->nspace, 0x534d, x->comm);
    free(X);
    free(u);
    free(th);
  } else if (slab == k) {
    int nif = x->batch.if_count, lo = x->batch.if_space, n = nif - lo;
    double *N = calloc((size_t)(nif ? nif : 1) * nv, sizeof *N);
    double *u = malloc((size_t)(n ? n : 1) * nc * sizeof *u);
    double *th = malloc(np * sizeof *th);
    MPI_Status st;
    MPI_Recv(u, u ? n * nc : 0, MPI_DOUBLE, x->rank - x->nspace, 0x534c, x->comm, &st);
    if (transfer)
      MPI_Recv(th, th ? (int)np : 0, MPI_DOUBLE, x->rank - x->nspace, 0x534d, x->comm, &st);
    if (!N || !u || !th)
      err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory for a slab handoff");
    for (int q = 0; q < n && !err; ++q)
      for (int cc = 0; cc < nc; ++cc) N[(size_t)(lo + q) * nv + cc] = u[(size_t)q * nc + cc];
    if (!err) err = tsr_pinn_engine_set_neighbours(x->eng, N);
    if (!err && transfer) err = tsr_pinn_engine_set_state(x->eng, th, NULL, NULL, 0);
    free(N);
    free(u);
    free(th);
  }
  return tsr_run_agree(x->comm, err);
}
