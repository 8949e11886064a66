/* The rebalancer's policy: cost map, cost-weighted RCB and the decision (decomp/rebalance.h).
 *
 * Determinism: every rank runs this on the same bits (integer cost sums, allgathered times)
 * in the same order of operations, built with -ffp-contract=off like partition.c, so all
 * ranks get the same boxes without talking. */
#include "decomp/rebalance_impl.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decomp/partition_impl.h"

static int64_t blocks_for(int dim, const int cells[3], int b) {
  int64_t n = 1;
  for (int d = 0; d < dim; ++d) n *= (cells[d] + b - 1) / b;
  return n;
}

tsr_err tsr_rebalance_costmap_init(int dim, const int cells[3], int max_blocks,
                                   tsr_rebalance_costmap *map) {
  memset(map, 0, sizeof *map);
  TSR_CHECK(dim == 2 || dim == 3, TSR_ERR_INPUT, "a cost map needs a 2D or 3D grid, not %dD",
            dim);
  for (int d = 0; d < dim; ++d)
    TSR_CHECK(cells[d] >= 1, TSR_ERR_INPUT, "a cost map over %d cells along %c", cells[d],
              "xyz"[d]);
  if (max_blocks <= 0) max_blocks = TSR_REBALANCE_MAX_BLOCKS;
  /* start near the answer (total / max_blocks per block), then the smallest size that fits */
  double per = 1.0;
  for (int d = 0; d < dim; ++d) per *= cells[d];
  int b = (int)floor(pow(per / max_blocks, 1.0 / dim));
  if (b < 1) b = 1;
  while (b > 1 && blocks_for(dim, cells, b - 1) <= max_blocks) --b;
  while (blocks_for(dim, cells, b) > max_blocks) ++b;
  map->dim = dim;
  for (int d = 0; d < 3; ++d) {
    map->cells[d] = d < dim ? cells[d] : 1;
    map->bs[d] = d < dim ? b : 1;
    map->nb[d] = (map->cells[d] + map->bs[d] - 1) / map->bs[d];
  }
  map->nblock = (int64_t)map->nb[0] * map->nb[1] * map->nb[2];
  map->cost = calloc((size_t)map->nblock, sizeof *map->cost);
  TSR_CHECK(map->cost, TSR_ERR_MEMORY, "out of memory allocating a cost map of %lld blocks",
            (long long)map->nblock);
  return TSR_OK;
}

void tsr_rebalance_costmap_free(tsr_rebalance_costmap *map) {
  if (!map) return;
  free(map->cost);
  map->cost = NULL;
  map->nblock = 0;
}

void tsr_rebalance_costmap_clear(tsr_rebalance_costmap *map) {
  if (map->cost) memset(map->cost, 0, (size_t)map->nblock * sizeof *map->cost);
}

void tsr_rebalance_costmap_add_uniform(tsr_rebalance_costmap *map, const tsr_box *region,
                                       int64_t per_cell) {
  int blo[3], bhi[3];
  tsr_rb_block_range(map, region, blo, bhi);
  for (int kb = blo[2]; kb < bhi[2]; ++kb)
    for (int jb = blo[1]; jb < bhi[1]; ++jb)
      for (int ib = blo[0]; ib < bhi[0]; ++ib) {
        tsr_box bb = tsr_rb_block_box(map, ib, jb, kb), o = tsr_box_intersect(&bb, region);
        map->cost[tsr_rb_block_index(map, ib, jb, kb)] += tsr_box_cells(&o) * per_cell;
      }
}

void tsr_rebalance_costmap_add_cells(tsr_rebalance_costmap *map, const tsr_box *box,
                                     const uint32_t *work) {
  const int64_t nx = tsr_box_len(box, 0), ny = tsr_box_len(box, 1);
  for (int k = box->lo[2]; k < box->hi[2]; ++k)
    for (int j = box->lo[1]; j < box->hi[1]; ++j) {
      const uint32_t *row = work + ((int64_t)(k - box->lo[2]) * ny + (j - box->lo[1])) * nx;
      int64_t base = tsr_rb_block_index(map, 0, j / map->bs[1], k / map->bs[2]);
      for (int i = box->lo[0]; i < box->hi[0]; ++i)
        map->cost[base + i / map->bs[0]] += row[i - box->lo[0]];
    }
}

double tsr_rebalance_costmap_box_cost(const tsr_rebalance_costmap *map, const tsr_box *box) {
  return tsr_rb_box_sum(map, NULL, box);
}

typedef struct {
  const tsr_rebalance_costmap *map;
  const double *val; /* the cost of each block (NULL: the map's counts) */
  double *slab;    /* scratch: cost of each block-thick slab along the cut axis */
} cost_cutter;

/* The cut across axis of b that leaves part / total of b's cost on the low side: the cost of
 * each block-thick slab of b is summed, and inside the slab where the share is reached the
 * position is interpolated (uniform cost inside a block), then rounded to a cell. A box of
 * uniform cost is cut exactly as plain RCB cuts it. */
static int cost_cut(void *ctx, const tsr_box *b, int axis, double part, double total, int lo,
                    int hi) {
  const cost_cutter *cc = ctx;
  const tsr_rebalance_costmap *m = cc->map;
  const int len = tsr_box_len(b, axis), bs = m->bs[axis];
  int blo[3], bhi[3];
  tsr_rb_block_range(m, b, blo, bhi);
  int ns = bhi[axis] - blo[axis];
  for (int s = 0; s < ns; ++s) cc->slab[s] = 0.0;
  for (int kb = blo[2]; kb < bhi[2]; ++kb)
    for (int jb = blo[1]; jb < bhi[1]; ++jb)
      for (int ib = blo[0]; ib < bhi[0]; ++ib) {
        int idx[3] = {ib, jb, kb};
        cc->slab[idx[axis] - blo[axis]] += tsr_rb_part(m, cc->val, ib, jb, kb, b);
      }
  /* cost per cell of depth in each slab; all equal means a uniform box */
  double sum = 0.0, first = -1.0;
  int uniform = 1;
  for (int s = 0; s < ns; ++s) {
    int s0 = (blo[axis] + s) * bs, s1 = s0 + bs;
    if (s0 < b->lo[axis]) s0 = b->lo[axis];
    if (s1 > b->hi[axis]) s1 = b->hi[axis];
    double dens = cc->slab[s] / (double)(s1 - s0);
    if (s == 0) first = dens;
    else if (dens != first) uniform = 0;
    sum += cc->slab[s];
  }
  if (uniform || !(sum > 0.0)) return tsr_partition_rounded_cut(len, part, total, lo, hi);
  double target = sum * (part / total), acc = 0.0, x = (double)len;
  for (int s = 0; s < ns; ++s) {
    int s0 = (blo[axis] + s) * bs, s1 = s0 + bs;
    if (s0 < b->lo[axis]) s0 = b->lo[axis];
    if (s1 > b->hi[axis]) s1 = b->hi[axis];
    if (acc + cc->slab[s] >= target) {
      double dens = cc->slab[s] / (double)(s1 - s0);
      x = (double)(s0 - b->lo[axis]) + (dens > 0.0 ? (target - acc) / dens : 0.0);
      break;
    }
    acc += cc->slab[s];
  }
  double c = floor(x + 0.5);
  if (c < lo) return lo;
  if (c > hi) return hi;
  return (int)c;
}

/* tsr_rebalance_partition over the block costs val (NULL: the map's counts). */
static tsr_err partition(const tsr_rebalance_costmap *map, const double *val,
                         const int periodic[3], int nranks, const double *rate, int min_width,
                         tsr_layout *out) {
  memset(out, 0, sizeof *out);
  TSR_CHECK(map && map->cost, TSR_ERR_INTERNAL, "tsr_rebalance_partition without a cost map");
  TSR_CHECK(nranks >= 1, TSR_ERR_INPUT, "cannot rebalance over %d ranks", nranks);
  for (int r = 0; rate && r < nranks; ++r)
    TSR_CHECK(isfinite(rate[r]) && rate[r] > 0.0, TSR_ERR_INPUT,
              "the rate of rank %d is %g; rates must be positive and finite", r, rate[r]);
  int w = min_width > 0 ? min_width : 1;
  int most = map->nb[0] > map->nb[1] ? map->nb[0] : map->nb[1];
  if (map->nb[2] > most) most = map->nb[2];
  cost_cutter cc = {map, val, malloc((size_t)most * sizeof(double))};
  TSR_CHECK(cc.slab, TSR_ERR_MEMORY, "out of memory for the rebalancer's %d slabs", most);
  tsr_box *boxes = malloc((size_t)nranks * sizeof *boxes);
  int *owner = malloc((size_t)nranks * sizeof *owner);
  if (!boxes || !owner) {
    free(cc.slab);
    free(boxes);
    free(owner);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "out of memory for a partition of %d ranks", nranks);
  }
  tsr_box g = tsr_box_make(map->dim, map->cells);
  tsr_part_cutter cutter = {cost_cut, &cc};
  int ok = tsr_partition_rcb(g, map->dim, w, rate, nranks, &cutter, boxes);
  free(cc.slab);
  if (!ok) {
    free(boxes);
    free(owner);
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "cannot rebalance the grid over %d ranks with at least %d cells per rank "
                       "and axis", nranks, w);
  }
  for (int r = 0; r < nranks; ++r) owner[r] = r;
  out->dim = map->dim;
  out->global = g;
  for (int d = 0; d < 3; ++d) out->periodic[d] = periodic && d < map->dim ? !!periodic[d] : 0;
  out->nbox = nranks;
  out->boxes = boxes;
  out->owner = owner;
  return TSR_OK;
}

tsr_err tsr_rebalance_partition(const tsr_rebalance_costmap *map, const int periodic[3],
                                int nranks, const double *rate, int min_width,
                                tsr_layout *out) {
  return partition(map, NULL, periodic, nranks, rate, min_width, out);
}

static const tsr_box *box_of(const tsr_layout *L, int rank) {
  int b = tsr_layout_box_of(L, rank);
  return b < 0 ? NULL : &L->boxes[b];
}

/* Cells of rank r that stay on r between a and b. */
static int64_t kept(const tsr_layout *a, const tsr_layout *b, int r) {
  const tsr_box *x = box_of(a, r), *y = box_of(b, r);
  if (!x || !y) return 0;
  tsr_box o = tsr_box_intersect(x, y);
  return tsr_box_cells(&o);
}

static int64_t cells_of(const tsr_layout *L, int r) {
  const tsr_box *x = box_of(L, r);
  return x ? tsr_box_cells(x) : 0;
}

int64_t tsr_rebalance_cells_moved(const tsr_layout *a, const tsr_layout *b) {
  int64_t moved = 0;
  for (int r = 0; r < b->nbox; ++r) moved += cells_of(b, b->owner[r]) - kept(a, b, b->owner[r]);
  return moved;
}

void tsr_rebalance_note_migration(tsr_rebalance_state *state, double seconds, int64_t bytes,
                                  double predicted) {
  if (predicted > 0.0 && seconds > 2.0 * predicted) seconds = 2.0 * predicted;
  state->migrations++;
  state->last_seconds = seconds;
  state->last_bytes = bytes;
}

static tsr_err check_measure(const tsr_layout *cur, const tsr_rebalance_measure *m) {
  TSR_CHECK(m && m->time && m->work && m->map && m->map->cost, TSR_ERR_INTERNAL,
            "tsr_rebalance_decide without measurements");
  TSR_CHECK(m->nranks == cur->nbox && m->nsteps >= 1, TSR_ERR_INPUT,
            "rebalance figures of %d ranks over %d steps for a layout of %d boxes", m->nranks,
            m->nsteps, cur->nbox);
  for (int d = 0; d < 3; ++d)
    TSR_CHECK(m->map->cells[d] == cur->global.hi[d], TSR_ERR_INPUT,
              "the cost map spans %d cells along %c but the grid %d", m->map->cells[d],
              "xyz"[d], cur->global.hi[d]);
  for (int r = 0; r < m->nranks; ++r)
    TSR_CHECK(isfinite(m->time[r]) && m->time[r] >= 0.0 && m->work[r] >= 0, TSR_ERR_INPUT,
              "rank %d measured %g s for %lld work; both must be >= 0", r, m->time[r],
              (long long)m->work[r]);
  return TSR_OK;
}

/* Imbalance max/mean - 1 of x[0..n-1]; *most gets the max. */
static double imbalance_of(const double *x, int n, double *most) {
  double s = 0.0, mx = 0.0;
  for (int r = 0; r < n; ++r) {
    s += x[r];
    if (x[r] > mx) mx = x[r];
  }
  *most = mx;
  return s > 0.0 ? mx * n / s - 1.0 : 0.0;
}

/* The busiest rank's cells sent plus received between cur and next. */
static int64_t busiest_cells(const tsr_layout *cur, const tsr_layout *next, int n) {
  int64_t most = 0;
  for (int r = 0; r < n; ++r) {
    int64_t k = kept(cur, next, r);
    int64_t moved = (cells_of(cur, r) - k) + (cells_of(next, r) - k);
    if (moved > most) most = moved;
  }
  return most;
}

/* The migration's cost: from the last migration, else the bytes at the estimated bandwidth. */
static void migration_cost(const tsr_rebalance_opts *o, const tsr_rebalance_state *state,
                           tsr_rebalance_decision *d) {
  double bw = o->bandwidth > 0.0 ? o->bandwidth : TSR_REBALANCE_BANDWIDTH;
  if (state && state->migrations > 0 && state->last_bytes > 0 && state->last_seconds > 0.0) {
    /* a migration costs a fixed part (rebuilding the exchange, the graphs) and its bytes: for
     * fewer bytes than the last one, half its time plus the other half scaled down (on two
     * H200s moves of a tenth of the first's bytes took 0.6-0.8 of its time: scaled down in
     * full, they were priced at a tenth and taken on noise); for more, its time plus the extra
     * bytes at its rate (at least the estimate's) */
    double b = (double)d->bytes_moved, b1 = (double)state->last_bytes, t1 = state->last_seconds;
    if (b1 / t1 > bw) bw = b1 / t1;
    d->migration_cost = b <= b1 ? t1 * (TSR_REBALANCE_FIXED + (1.0 - TSR_REBALANCE_FIXED) * b / b1)
                                : t1 + (b - b1) / bw;
    d->migration_measured = 1;
  } else {
    d->migration_cost = (double)d->bytes_moved / bw;
  }
}

/* The figures a decision works from, per rank (n each) and per block (nb each). */
typedef struct {
  double *t, *cells, *extra, *work, *rate, *pred;
  double *past, *ahead, *cost;
} figures;

static tsr_err figures_alloc(int n, int64_t nb, figures *f) {
  double *p = malloc((6 * (size_t)n + 3 * (size_t)nb) * sizeof *p);
  TSR_CHECK(p, TSR_ERR_MEMORY, "out of memory for the rebalancer's figures of %d ranks", n);
  f->t = p, f->cells = p + n, f->extra = p + 2 * n, f->work = p + 3 * n, f->rate = p + 4 * n;
  f->pred = p + 5 * n;
  f->past = p + 6 * n, f->ahead = f->past + nb, f->cost = f->ahead + nb;
  return TSR_OK;
}

/* Each rank's speed (modelled work per second of m->time) into f->rate: the work model's,
 * over its windows, where there is one (tsr_rb_model_speeds), else the window's. Returns 1
 * when they differ by half the threshold or more, else sets them all to the ranks' common
 * speed (total work over total time) and returns 0. */
static int speeds(const tsr_rebalance_measure *m, double threshold, double beta, figures *f) {
  const int n = m->nranks;
  double tw = 0.0, tt = 0.0;
  int all = 1;
  for (int r = 0; r < n; ++r) {
    tw += f->work[r];
    tt += m->time[r];
    all &= m->time[r] > 0.0 && f->work[r] > 0.0;
  }
  if (all && m->model) {
    tsr_rb_model_speeds(m->model, beta, f->rate);
    for (int r = 0; r < n; ++r) {
      f->rate[r] /= m->nsteps; /* per step to per window, as m->time */
      all &= f->rate[r] > 0.0;
    }
  } else {
    for (int r = 0; all && r < n; ++r) f->rate[r] = f->work[r] / m->time[r];
  }
  double rmin = INFINITY, rmax = 0.0;
  for (int r = 0; all && r < n; ++r) {
    rmin = fmin(rmin, f->rate[r]);
    rmax = fmax(rmax, f->rate[r]);
  }
  /* speeds closer than half the threshold are noise: cut as for equal ranks */
  if (all && rmax / rmin - 1.0 >= 0.5 * threshold) return 1;
  for (int r = 0; r < n; ++r) f->rate[r] = tt > 0.0 && tw > 0.0 ? tw / tt : 1.0;
  return 0;
}

tsr_err tsr_rebalance_decide(const tsr_layout *cur, const tsr_rebalance_measure *m,
                             const tsr_rebalance_opts *o, const tsr_rebalance_state *state,
                             tsr_layout *next, tsr_rebalance_decision *d) {
  memset(d, 0, sizeof *d);
  memset(next, 0, sizeof *next);
  TSR_CALL(check_measure(cur, m));
  const int n = m->nranks;
  const tsr_rebalance_costmap *map = m->map;
  figures f = {0};
  TSR_CALL(figures_alloc(n, map->nblock, &f));
  for (int r = 0; r < n; ++r) f.t[r] = m->time[r] / m->nsteps;
  d->imbalance = imbalance_of(f.t, n, &d->step_time);
  if (!(d->step_time > 0.0)) {
    d->reason = TSR_REBALANCE_NO_DATA;
    free(f.t);
    return TSR_OK;
  }
  /* the costly cells over the window just timed and over the next o->window steps */
  const tsr_rebalance_costmap *start = m->start && m->span > 0 ? m->start : NULL;
  tsr_err e = tsr_rb_motion(map, start, start ? (double)o->window / m->span : 1.0, f.past,
                            f.ahead);
  if (e) {
    free(f.t);
    return e;
  }
  for (int r = 0; r < n; ++r) {
    const tsr_box *b = box_of(cur, r);
    f.cells[r] = (double)tsr_box_cells(b);
    /* the rank's own count at the end, moved to the window's mean as the map says */
    f.extra[r] = (double)m->work[r] - f.cells[r] + tsr_rb_box_sum(map, f.past, b) -
                 (tsr_rb_box_sum(map, NULL, b) - f.cells[r]);
  }
  if (m->model) tsr_rb_model_update(m->model, f.cells, f.extra, f.t);
  const double beta = m->model ? m->model->beta : 1.0;
  d->beta = beta;
  for (int r = 0; r < n; ++r) f.work[r] = f.cells[r] + beta * f.extra[r];
  int uneven = speeds(m, o->threshold, beta, &f);
  for (int64_t i = 0; i < map->nblock; ++i)
    f.cost[i] = (double)tsr_rb_block_cells(map, i) + beta * f.ahead[i];
  for (int r = 0; r < n; ++r)
    f.pred[r] = tsr_rb_box_sum(map, f.cost, box_of(cur, r)) / m->nsteps / f.rate[r];
  d->expected = imbalance_of(f.pred, n, &d->expected_step_time);
  tsr_rebalance_model *mo = m->model;
  if (mo && mo->last >= 0.0) {
    /* what the last prediction missed, so that the boxes are left before the imbalance
     * measured reaches the threshold, not after */
    double miss = d->imbalance - mo->last, decayed = mo->margin * TSR_REBALANCE_MARGIN_DECAY;
    mo->margin = fmin(fmax(miss, decayed), 0.5 * o->threshold);
  }
  d->margin = mo ? mo->margin : 0.0;
  tsr_layout L;
  e = partition(map, f.cost, cur->periodic, n, uneven ? f.rate : NULL, o->min_width, &L);
  if (e) {
    free(f.t);
    return e;
  }
  for (int r = 0; r < n; ++r)
    f.pred[r] = tsr_rb_box_sum(map, f.cost, box_of(&L, r)) / m->nsteps / f.rate[r];
  d->predicted = imbalance_of(f.pred, n, &d->predicted_step_time);
  free(f.t);
  d->cells_moved = tsr_rebalance_cells_moved(cur, &L);
  d->bytes_moved = busiest_cells(cur, &L, n) * o->bytes_per_cell;
  migration_cost(o, state, d);
  d->saving = (d->expected_step_time - d->predicted_step_time) * o->window *
              (m->wall_ratio > 0.0 ? m->wall_ratio : 1.0);
  if (fmax(d->imbalance, d->expected + d->margin) <= o->threshold)
    d->reason = TSR_REBALANCE_BALANCED;
  else if (d->cells_moved == 0) d->reason = TSR_REBALANCE_SAME_BOXES;
  else if (!(d->saving > d->migration_cost)) d->reason = TSR_REBALANCE_NO_GAIN;
  else d->reason = TSR_REBALANCE_YES;
  d->rebalance = d->reason == TSR_REBALANCE_YES;
  if (mo) mo->last = d->rebalance ? d->predicted : d->expected;
  if (d->rebalance) *next = L;
  else tsr_layout_free(&L);
  return TSR_OK;
}

const char *tsr_rebalance_reason_text(tsr_rebalance_reason r) {
  switch (r) {
  case TSR_REBALANCE_YES: return "rebalanced";
  case TSR_REBALANCE_BALANCED: return "imbalance at or below the threshold";
  case TSR_REBALANCE_NO_GAIN: return "the predicted saving does not repay a migration";
  case TSR_REBALANCE_SAME_BOXES: return "the best partition is the current one";
  case TSR_REBALANCE_NO_DATA: return "no compute time measured";
  }
  return "?";
}

const char *tsr_rebalance_describe(const tsr_rebalance_decision *d, char *buf, size_t size) {
  if (d->reason == TSR_REBALANCE_NO_DATA) {
    snprintf(buf, size, "rebalance: not rebalanced: %s", tsr_rebalance_reason_text(d->reason));
    return buf;
  }
  int w = snprintf(buf, size, "rebalance: imbalance %.3f (%.3f ahead on these boxes), predicted "
                   "%.3f after; ", d->imbalance, d->expected, d->predicted);
  if (w < 0 || (size_t)w >= size) return buf;
  if (d->rebalance)
    snprintf(buf + w, size - (size_t)w,
             "%lld cells moved, saving %.3g s over the window against a migration of %.3g s "
             "(%s)", (long long)d->cells_moved, d->saving, d->migration_cost,
             d->migration_measured ? "as measured" : "estimated");
  else if (d->reason == TSR_REBALANCE_NO_GAIN)
    snprintf(buf + w, size - (size_t)w,
             "not rebalanced: the predicted saving, %.3g s over the window, does not repay a "
             "migration of %.3g s (%s)", d->saving, d->migration_cost,
             d->migration_measured ? "as measured" : "estimated");
  else
    snprintf(buf + w, size - (size_t)w, "not rebalanced: %s", tsr_rebalance_reason_text(d->reason));
  return buf;
}

static tsr_err mpi_fail(int rc, const char *call) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__, "%s failed in the rebalancer: %s", call,
                     text);
}

tsr_err tsr_rebalance_costmap_sum(MPI_Comm comm, tsr_rebalance_costmap *map) {
  TSR_CHECK(map->nblock <= INT_MAX, TSR_ERR_UNSUPPORTED,
            "a cost map of %lld blocks is more than one MPI reduction takes",
            (long long)map->nblock);
  int rc = MPI_Allreduce(MPI_IN_PLACE, map->cost, (int)map->nblock, MPI_INT64_T, MPI_SUM, comm);
  return rc == MPI_SUCCESS ? TSR_OK : mpi_fail(rc, "MPI_Allreduce");
}

tsr_err tsr_rebalance_gather(MPI_Comm comm, double my_time, int64_t my_work,
                             tsr_rebalance_costmap *map, double *time, int64_t *work) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  /* time and work travel as bytes in one message: the times arrive bit for bit */
  unsigned char mine[16], *all = malloc((size_t)n * sizeof mine);
  TSR_CHECK(all, TSR_ERR_MEMORY, "out of memory gathering the figures of %d ranks", n);
  memcpy(mine, &my_time, 8);
  memcpy(mine + 8, &my_work, 8);
  int rc = MPI_Allgather(mine, 16, MPI_BYTE, all, 16, MPI_BYTE, comm);
  if (rc != MPI_SUCCESS) {
    free(all);
    return mpi_fail(rc, "MPI_Allgather");
  }
  for (int r = 0; r < n; ++r) {
    memcpy(&time[r], all + 16 * (size_t)r, 8);
    memcpy(&work[r], all + 16 * (size_t)r + 8, 8);
  }
  free(all);
  return tsr_rebalance_costmap_sum(comm, map);
}
