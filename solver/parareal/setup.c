/* Parareal's set-up: rank groups, the coarse and fine layouts, the slices' time plan, the
 * contexts, graphs and states (parareal_impl.h), and the plan `tessera check` prints. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver/integrate.h"
#include "solver/parareal/batch.h"
#include "solver/parareal/coarse.h"
#include "solver/parareal/graphs.h"
#include "solver/parareal/parareal.h"
#include "solver/parareal/parareal_impl.h"
#include "solver/run_internal.h"

tsr_err tsr_pr_groups(pr *p) {
  const tsr_case *c = p->c;
  p->P = c->decomp.time_slices;
  p->m = c->parareal.slices_per_rank;
  p->r = c->parareal.coarsen;
  p->ngroup = p->P / p->m;
  if (p->size % p->ngroup) {
    char ok[128] = "";
    size_t w = 0;
    for (int k = 1; k <= 4 && w < sizeof ok; ++k)
      w += (size_t)snprintf(ok + w, sizeof ok - w, "%s%d", k > 1 ? ", " : "", k * p->ngroup);
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "%s: decomposition.time_slices: %d slices, %d per rank, need the rank "
                       "count to be a multiple of %d rank groups, and the run has %d ranks; "
                       "launch %s, ... ranks, or change time_slices or parareal.slices_per_rank",
                       c->path, p->P, p->m, p->ngroup, p->size, ok);
  }
  p->nspace = p->size / p->ngroup;
  p->group = p->rank / p->nspace;
  p->srank = p->rank % p->nspace;
  p->s0 = p->group * p->m;
  return TSR_OK;
}

/* The coarse grid's partition, and the fine one as its boxes times r (so that restriction and
 * prolongation stay on each rank). */
static void coarse_case(pr *p) {
  const tsr_case *c = p->c;
  p->cc = *c;
  for (int d = 0; d < c->dim; ++d) p->cc.cells[d] = c->cells[d] / p->r;
  p->cc.time.scheme = c->parareal.coarse_scheme;
}

static tsr_err layouts(pr *p) {
  const tsr_case *c = p->c;
  coarse_case(p);
  tsr_part_opts po = tsr_run_part_opts(c);
  tsr_err err = tsr_partition(c->dim, p->cc.cells, c->periodic, p->nspace, &po,
                              &p->coarse.layout);
  if (err) {
    tsr_err_append("  (parareal partitions the coarse grid, grid.cells / parareal.coarsen, "
                   "over the %d ranks of each time slice group; use fewer ranks or a smaller "
                   "parareal.coarsen)", p->nspace);
    return err;
  }
  TSR_CALL(tsr_layout_copy(&p->coarse.layout, &p->fx[0].layout));
  tsr_layout *f = &p->fx[0].layout;
  for (int d = 0; d < c->dim; ++d) f->global.hi[d] *= p->r;
  for (int b = 0; b < f->nbox; ++b)
    for (int d = 0; d < c->dim; ++d) {
      f->boxes[b].lo[d] *= p->r;
      f->boxes[b].hi[d] *= p->r;
    }
  return TSR_OK;
}

/* Slice boundaries in fine steps, and each slice's coarse steps at the coarse grid's limit,
 * for N fine steps of dt (p->cc's cells and scheme set). */
static tsr_err time_plan(pr *p, int64_t N, double dt) {
  const tsr_case *c = p->c;
  TSR_CHECK(N >= p->P, TSR_ERR_INPUT,
            "%s: decomposition.time_slices: %d slices of a run of %" PRId64 " steps; each slice "
            "needs a step at least: use at most %" PRId64 " slices", c->path, p->P, N, N);
  TSR_ALLOC(p->step_of, (size_t)p->P + 1, "parareal slices");
  TSR_ALLOC(p->cn, (size_t)p->P, "parareal slices");
  TSR_ALLOC(p->cdt, (size_t)p->P, "parareal slices");
  for (int n = 0; n <= p->P; ++n) p->step_of[n] = N / p->P * n + N % p->P * n / p->P;
  double h[3];
  for (int d = 0; d < 3; ++d) h[d] = (c->hi[d] - c->lo[d]) / p->cc.cells[d];
  p->limit = tsr_model_dt_limit(c->model, c->param_value, h, c->dim);
  if (c->parareal.coarse_dt > 0.0) {
    TSR_CHECK(!(c->parareal.coarse_dt > p->limit), TSR_ERR_INPUT,
              "%s: parareal.coarse_dt: %g is past the coarse grid's stability limit %g (model "
              "%s on %d cells across x); the coarse propagator would be unstable: give at most "
              "%g, or use parareal.coarse_cfl", c->path, c->parareal.coarse_dt, p->limit,
              tsr_models[c->model].name, p->cc.cells[0], p->limit);
    p->dtc_max = c->parareal.coarse_dt;
  } else {
    TSR_CHECK(isfinite(p->limit) && p->limit > 0.0, TSR_ERR_INPUT,
              "%s: parareal: model %s with these parameters has no stability limit to take "
              "parareal.coarse_cfl of; give parareal.coarse_dt", c->path,
              tsr_models[c->model].name);
    p->dtc_max = c->parareal.coarse_cfl * p->limit;
  }
  double cheaper = 1.0; /* cells of the fine grid per coarse cell */
  for (int d = 0; d < c->dim; ++d) cheaper *= (double)c->cells[d] / p->cc.cells[d];
  for (int n = 0; n < p->P; ++n) {
    const int64_t fine = p->step_of[n + 1] - p->step_of[n];
    const double span = (double)fine * dt;
    double k = ceil(span / p->dtc_max * (1.0 - 1e-12));
    /* a coarse propagator that costs more than the fine one cannot make the run faster than
     * one serial run (a tiny coarse_dt overflowed the step count, or ran for hours) */
    const double cost = k * (double)tsr_integrate_plan(p->cc.time.scheme).nstage / cheaper,
                 most = (double)fine * (double)tsr_integrate_plan(c->time.scheme).nstage;
    TSR_CHECK(cost <= most, TSR_ERR_INPUT,
              "%s: parareal: %s gives %.3g coarse steps of dt %g in slice %d, which cost more "
              "than its %" PRId64 " fine steps of dt %g: the coarse propagator must be the "
              "cheaper one; give a larger coarse dt or parareal.coarse_cfl", c->path,
              c->parareal.coarse_dt > 0.0 ? "parareal.coarse_dt" : "parareal.coarse_cfl", k,
              p->dtc_max, n + 1, fine, dt);
    p->cn[n] = k < 1.0 ? 1 : (int64_t)k;
    p->cdt[n] = span / (double)p->cn[n];
  }
  return TSR_OK;
}

static tsr_err new_field(pr *p, tsr_field **f) {
  const tsr_run_ctx *x = &p->fx[0];
  const tsr_prec prec =
      p->c->precision == TSR_PRECISION_SINGLE ? TSR_PREC_SINGLE : TSR_PREC_DOUBLE;
  return tsr_field_create_as(p->c->dim, &x->box, x->ghost, p->c->ncomp, x->be->mem, prec, f);
}

static tsr_err state(pr *p) {
  const int m = p->m;
  TSR_ALLOC(p->in, (size_t)m + 1, "parareal states");
  TSR_ALLOC(p->keep, (size_t)m + 1, "parareal states");
  TSR_ALLOC(p->fv, (size_t)m, "parareal states");
  TSR_ALLOC(p->gold, (size_t)m, "parareal states");
  TSR_ALLOC(p->fresh, (size_t)m, "parareal states");
  TSR_ALLOC(p->chg, 2 * (size_t)m, "parareal states");
  for (int j = 0; j <= m; ++j) {
    TSR_CALL(new_field(p, &p->in[j]));
    TSR_CALL(new_field(p, &p->keep[j]));
  }
  for (int j = 0; j < m; ++j) {
    TSR_CALL(new_field(p, &p->fv[j]));
    TSR_CALL(new_field(p, &p->gold[j]));
  }
  TSR_CALL(new_field(p, &p->gnew));
  TSR_CALL(new_field(p, &p->scratch));
  const size_t n = (size_t)p->c->ncomp * (size_t)tsr_box_cells(&p->fx[0].box);
  TSR_ALLOC(p->sbuf, n, "parareal transfer buffer");
  TSR_ALLOC(p->rbuf, n, "parareal transfer buffer");
  return TSR_OK;
}

/* The coarse steps in time tiles, several steps a pass (solver/run_tiles.c), on CPU ranks where
 * the coarse grid exchanges nothing (one space rank, no periodic axis) and tiles can apply
 * (forward Euler, a stencil of radius 1, nothing that depends on t): each coarse cell then
 * crosses memory once per pass (2D 64^2, 8 slices: coarse sweeps 0.013 -> 0.006 s). The bits
 * are those of single steps (time.fuse's invariance), so parareal's iterations do not change.
 * Not on GPUs: their pass kernels march rows of tiles sized for large grids, and on a coarse
 * grid of 64^2 (one H100, bench/parareal_gpu.sh) passes of 3 in the coarse graphs took the
 * coarse sweeps from 0.096 to 0.211 s. The fields get ghosts as deep as the longest pass the
 * host takes (7); the blocks are then as long as its passes. */
#define COARSE_FUSE_GHOSTS 7
static void coarse_fuse_before(pr *p) {
  const tsr_case *c = p->c;
  /* the fine context: the coarse grid's model, source and boundaries, already set up */
  const tsr_run_ctx *x = &p->fx[0];
  int ok = x->be->mem == TSR_MEM_HOST && p->nspace == 1 &&
           !tsr_run_tiles_refused(x, c->parareal.coarse_scheme == TSR_SCHEME_EULER);
  for (int d = 0; d < c->dim; ++d) ok &= !c->periodic[d];
  if (!ok) return;
  p->cc.time.fuse = COARSE_FUSE_GHOSTS;
  p->cc.decomp.time_slices = 1; /* tsr_run_ghost_width gives parareal's runs no deep ghosts */
}

static void coarse_fuse_after(pr *p) {
  tsr_run_ctx *y = &p->coarse;
  if (y->fuse <= 1) return;
  tsr_run_tiles_setup(y);
  /* passes take an odd number of steps (run_tiles.c): blocks of one pass each */
  int m = y->tile_max < COARSE_FUSE_GHOSTS ? y->tile_max : COARSE_FUSE_GHOSTS;
  if (m % 2 == 0) --m;
  y->fuse = m >= 3 ? m : 1;
}

tsr_err tsr_pr_setup(pr *p, const tsr_run_opts *opts) {
  TSR_CALL(tsr_pr_groups(p));
  if (MPI_Comm_split(p->world, p->group, p->srank, &p->slice) != MPI_SUCCESS)
    return tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__, "MPI_Comm_split of the time slices");
  tsr_backend want = opts->backend != TSR_BACKEND_AUTO ? opts->backend : p->c->backend;
  int cuda = 0;
  TSR_CALL(tsr_run_use_cuda(p->world, want, &cuda));
  /* nothing is held yet: the contexts start over on the group's ranks */
  tsr_run_ctx_free(&p->fx[0]);
  free(p->fx);
  p->fx = NULL;
  TSR_ALLOC(p->fx, (size_t)(cuda ? p->m : 1), "parareal's fine contexts");
  p->nctx = cuda ? p->m : 1;
  for (int i = 0; i < p->nctx; ++i) tsr_run_ctx_init(&p->fx[i], p->c, p->slice, opts);
  tsr_run_ctx_init(&p->coarse, &p->cc, p->slice, opts);
  TSR_CALL(layouts(p));
  for (int i = 0; i <= p->nctx; ++i) {
    tsr_run_ctx *x = i < p->nctx ? &p->fx[i] : &p->coarse;
    x->device_comm = p->world;
#ifdef TSR_HAVE_CUDA
    x->be = cuda ? &tsr_backend_cuda : &tsr_backend_host;
#endif
    if (i > 0 && i < p->nctx) TSR_CALL(tsr_layout_copy(&p->fx[0].layout, &x->layout));
    if (i == p->nctx) coarse_fuse_before(p);
    TSR_CALL(tsr_run_setup(x));
  }
  coarse_fuse_after(p);
  TSR_CALL(time_plan(p, p->fx[0].nsteps, p->fx[0].dt));
  TSR_ALLOC(p->g, (size_t)p->nctx, "parareal's CUDA graphs");
  for (int i = 0; i < p->nctx; ++i) TSR_CALL(tsr_pr_graph_create(&p->fx[i], GRAPH_CHUNK, &p->g[i]));
  /* the coarse steps replay graphs when every slice has the same steps: then coarse step k
   * of slice s is step s cn + k of one dt, as the graphs' time kernel computes it */
  TSR_CALL(tsr_pr_batch_create(p->fx, p->nctx, &p->batch));
  TSR_CALL(tsr_pr_coarse_block_pick(&p->coarse, &p->cblock));
  if (!p->cblock && p->fx[0].nsteps % p->P == 0) {
    p->coarse.dt = p->coarse.desc.dt = p->cdt[0];
    TSR_CALL(tsr_pr_graph_create(&p->coarse, GRAPH_CHUNK, &p->gc));
  }
  return state(p);
}

void tsr_pr_teardown(pr *p) {
  tsr_pr_batch_destroy(&p->batch);
  for (int i = 0; p->g && i < p->nctx; ++i) tsr_pr_graph_destroy(&p->g[i]);
  tsr_pr_graph_destroy(&p->gc);
  free(p->g);
  for (int j = 0; p->in && j <= p->m; ++j) tsr_field_destroy(&p->in[j]);
  for (int j = 0; p->keep && j <= p->m; ++j) tsr_field_destroy(&p->keep[j]);
  for (int j = 0; p->fv && j < p->m; ++j) {
    tsr_field_destroy(&p->fv[j]);
    tsr_field_destroy(&p->gold[j]);
  }
  tsr_field_destroy(&p->gnew);
  tsr_field_destroy(&p->scratch);
  tsr_pr_link_destroy(&p->link);
  free(p->in), free(p->keep), free(p->fv), free(p->gold), free(p->fresh), free(p->chg);
  free(p->sbuf), free(p->rbuf), free(p->step_of), free(p->cn), free(p->cdt), free(p->hist);
  tsr_run_ctx_free(&p->coarse);
  for (int i = 1; p->fx && i < p->nctx; ++i) tsr_run_ctx_free(&p->fx[i]);
}

tsr_err tsr_parareal_plan(const tsr_case *c, int nranks, int *nspace, FILE *out) {
  pr p;
  memset(&p, 0, sizeof p);
  p.c = c;
  p.size = nranks;
  TSR_CALL(tsr_pr_groups(&p));
  *nspace = p.nspace;
  /* the time plan the run makes, and refuses as it would (a coarse dt past the coarse grid's
   * limit, or coarse steps costing more than the fine ones) */
  coarse_case(&p);
  double dt, stable;
  int64_t N;
  TSR_CALL(tsr_integrate_time_plan(c, &dt, &N, &stable));
  tsr_err err = time_plan(&p, N, dt);
  const int64_t cn = p.cn ? p.cn[0] : 0;
  const double cdt = p.cdt ? p.cdt[0] : 0.0;
  free(p.step_of), free(p.cn), free(p.cdt);
  TSR_CALL(err);
  fprintf(out, "parareal: %d time slices on %d rank group%s of %d rank%s (%d slice%s per rank "
          "in turn); coarse propagator: grid.cells / %d, %s, %s; tol %g, at most %d "
          "iterations\n", p.P, p.ngroup, p.ngroup == 1 ? "" : "s", p.nspace,
          p.nspace == 1 ? "" : "s", p.m, p.m == 1 ? "" : "s", p.r,
          tsr_integrate_plan(c->parareal.coarse_scheme).name,
          c->parareal.coarse_dt > 0.0 ? "coarse_dt as given" : "coarse_cfl x its stable step",
          c->parareal.tol, c->parareal.max_iterations);
  fprintf(out, "parareal: %" PRId64 " fine steps of dt %.6g in all, %" PRId64 " a slice; the "
          "first slice's %" PRId64 " coarse steps of dt %.6g (the coarse grid's stable limit "
          "%.6g)\n", N, dt, N / p.P, cn, cdt, p.limit);
  return TSR_OK;
}
