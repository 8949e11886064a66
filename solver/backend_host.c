/* The host backend: OpenMP loops over host fields, MPI halo exchange. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/steps.h"
#include "kernels/work.h"
#include "solver/backend.h"
#include "solver/run_internal.h"

static tsr_err setup(tsr_run_ctx *x) {
  return tsr_halo_create(&x->plan, x->comm, x->c->ncomp, &x->halo);
}

static void teardown(tsr_run_ctx *x) { tsr_halo_destroy(&x->halo); }

static tsr_err put_box(tsr_field *f, int comp, const tsr_box *b, const double *owned);

static tsr_err prepare(tsr_run_ctx *x) {
  TSR_ALLOC(x->scratch, tsr_box_cells(&x->reach), "expression values");
  int len = 0;
  for (int d = 0; d < 3; ++d) len += tsr_box_len(&x->reach, d);
  TSR_ALLOC(x->coords, len, "cell coordinates");
  return TSR_OK;
}

/* Over the box at once (tsr_expr_eval_grid: each subexpression as often as its coordinates
 * change, rows on all threads): straight into a double field, through the scratch array
 * into a single one (upload rounds). Same bits as muparser point by point. */
static tsr_err eval(tsr_run_ctx *x, tsr_expr *e, tsr_field *f, int comp, double t,
                    const tsr_box *region) {
  const tsr_box *b = region ? region : &x->box;
  tsr_expr_points g;
  tsr_box_centres(x->c, b, x->coords, &g);
  if (f->prec == TSR_PREC_DOUBLE) {
    g.stride[0] = 1, g.stride[1] = f->sy, g.stride[2] = f->sz;
    return tsr_expr_eval_grid(e, &g, t,
                              (double *)f->data + tsr_field_at(f, comp, b->lo[0], b->lo[1],
                                                               b->lo[2]));
  }
  g.stride[0] = 1, g.stride[1] = g.n[0], g.stride[2] = (ptrdiff_t)g.n[0] * g.n[1];
  TSR_CALL(tsr_expr_eval_grid(e, &g, t, x->scratch));
  return put_box(f, comp, b, x->scratch);
}

static tsr_err boundary(tsr_run_ctx *x, tsr_field *f, double t, int part) {
  tsr_bc_fill(x->bc, f, t, part);
  return TSR_OK;
}

static tsr_err halo_begin(tsr_run_ctx *x, tsr_field *f) { return tsr_halo_begin(x->halo, f); }
static tsr_err halo_new(tsr_run_ctx *x, const tsr_halo_plan *plan, tsr_halo **h) {
  return tsr_halo_create(plan, x->comm, x->c->ncomp, h);
}
static tsr_err halo_end(tsr_run_ctx *x, tsr_field *f) { return tsr_halo_end(x->halo, f); }

static tsr_err stage(tsr_run_ctx *x, const tsr_stage_desc *d, const tsr_box *region,
                     const tsr_field *in, const tsr_field *base, tsr_field *acc,
                     const tsr_field *src, tsr_field *out) {
  tsr_stage_host(d, region, in, base, acc, src, out);
  return TSR_OK;
}

/* Time tiles: the face values of the boundary call before it (the same t: they do not depend
 * on it where tiles apply). */
static tsr_err steps(tsr_run_ctx *x, const tsr_stage_desc *d, int m, const tsr_box *region,
                     const tsr_field *in, const tsr_field *src, tsr_field *out) {
  tsr_steps_bc bc = {0};
  bc.nface = tsr_bc_nfaces(x->bc);
  for (int i = 0; i < bc.nface; ++i) {
    int fresh;
    bc.face[i] = *tsr_bc_face_info(x->bc, i);
    bc.val[i] = tsr_bc_values(x->bc, i, 0.0, &fresh);
  }
  return tsr_steps_host(d, m, x->radius, region, &bc, in, src, out);
}

/* Measured with bench/host_stencil (bench/README.md, 2 cores, heat 4096^2 and 256^3): 2D gains
 * up to m = 8 in fp64 (1.74-2.11x) and fp32 (1.26x), so passes of 7; 3D fp64 peaks at m = 4-6
 * (1.58-1.69x; past that the columns' x and y halos grow faster than a pass saves), so passes
 * of 5; 3D fp32 gains nothing (0.90-1.00x: its stage is compute-bound already), so none. The
 * SSP schemes' and RK4's stages are levels of a pass like those steps: as many steps as fit
 * (RK4: 2 in 2D, of which the driver's odd pass lengths take 1; 1 in 3D fp64). */
static int steps_max(tsr_run_ctx *x) {
  const int levels = x->c->dim == 2 ? TSR_STEPS_MAX
                     : x->slot[TSR_SLOT_U]->prec == TSR_PREC_DOUBLE ? 5 : 0;
  return levels / x->scheme.nstage;
}

/* Single fields round each value once, as the GPU's conversion does (to nearest). */
static tsr_err put_box(tsr_field *f, int comp, const tsr_box *b, const double *owned) {
  size_t nx = (size_t)tsr_box_len(b, 0);
  for (int k = b->lo[2]; k < b->hi[2]; ++k)
    for (int j = b->lo[1]; j < b->hi[1]; ++j, owned += nx) {
      ptrdiff_t o = tsr_field_at(f, comp, b->lo[0], j, k);
      if (f->prec == TSR_PREC_DOUBLE) memcpy((double *)f->data + o, owned, nx * sizeof(double));
      else for (size_t i = 0; i < nx; ++i) ((float *)f->data)[o + (ptrdiff_t)i] = (float)owned[i];
    }
  return TSR_OK;
}

static tsr_err upload(tsr_run_ctx *x, tsr_field *f, int comp, const double *owned) {
  return put_box(f, comp, &f->box, owned);
}

static tsr_err download(tsr_run_ctx *x, const tsr_field *f, int comp, double *owned) {
  const tsr_box *b = &f->box;
  size_t nx = (size_t)tsr_box_len(b, 0);
  for (int k = b->lo[2]; k < b->hi[2]; ++k)
    for (int j = b->lo[1]; j < b->hi[1]; ++j, owned += nx) {
      ptrdiff_t o = tsr_field_at(f, comp, b->lo[0], j, k);
      if (f->prec == TSR_PREC_DOUBLE) memcpy(owned, (const double *)f->data + o, nx * sizeof(double));
      else for (size_t i = 0; i < nx; ++i) owned[i] = ((const float *)f->data)[o + (ptrdiff_t)i];
    }
  return TSR_OK;
}

static tsr_err norms(tsr_run_ctx *x, const tsr_field *u, const tsr_field *exact, int q,
                     double *out) {
  const tsr_box *b = &u->box;
  double mn = HUGE_VAL, mx = -HUGE_VAL, s = 0.0, sq = 0.0, es = 0.0, em = 0.0;
  int nonfinite = 0;
  for (int k = b->lo[2]; k < b->hi[2]; ++k)
    for (int j = b->lo[1]; j < b->hi[1]; ++j) {
      const ptrdiff_t row = tsr_field_at(u, q, b->lo[0], j, k);
      const ptrdiff_t erow = exact ? tsr_field_at(exact, q, b->lo[0], j, k) : 0;
      for (int i = 0; i < tsr_box_len(b, 0); ++i) {
        double v = tsr_field_get(u, row + i);
        if (!isfinite(v)) nonfinite = 1;
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
        s += v;
        sq += v * v;
        if (exact) {
          double e = fabs(v - tsr_field_get(exact, erow + i));
          es += e * e;
          em = e > em ? e : em;
        }
      }
    }
  out[TSR_NORM_MIN] = nonfinite ? -HUGE_VAL : mn;
  out[TSR_NORM_MAX] = nonfinite ? HUGE_VAL : mx;
  out[TSR_NORM_SUM] = s;
  out[TSR_NORM_SQ] = sq;
  out[TSR_NORM_ESQ] = es;
  out[TSR_NORM_EMAX] = nonfinite ? HUGE_VAL : em;
  return TSR_OK;
}

static tsr_err sync(tsr_run_ctx *x) { return TSR_OK; }

/* Checkpoint staging: plain host memory, filled by all threads (one contiguous block each). */
static tsr_err stage_create(tsr_run_ctx *x, size_t bytes, void **stage, void **host) {
  *host = *stage = malloc(bytes ? bytes : 1);
  TSR_CHECK(*stage, TSR_ERR_MEMORY, "out of memory allocating %zu bytes for checkpoint staging",
            bytes);
  /* first touch now, by the threads that copy (stage_copy's split), not in the first stall */
  char *p = *stage;
#pragma omp parallel
  {
    size_t nt = (size_t)omp_get_num_threads(), t = (size_t)omp_get_thread_num();
    size_t lo = bytes / nt * t, hi = t + 1 == nt ? bytes : bytes / nt * (t + 1);
    memset(p + lo, 0, hi - lo);
  }
  return TSR_OK;
}

static tsr_err stage_copy(tsr_run_ctx *x, void *stage, const tsr_field *f, size_t bytes) {
  const char *src = (const char *)f->data;
  char *dst = stage;
#pragma omp parallel
  {
    size_t nt = (size_t)omp_get_num_threads(), t = (size_t)omp_get_thread_num();
    size_t lo = bytes / nt * t, hi = t + 1 == nt ? bytes : bytes / nt * (t + 1);
    memcpy(dst + lo, src + lo, hi - lo);
  }
  return TSR_OK;
}

static void stage_destroy(tsr_run_ctx *x, void **stage) {
  free(*stage);
  *stage = NULL;
}

static tsr_err work(tsr_run_ctx *x, const tsr_field *u, uint32_t *w) {
  return tsr_work_host(&x->desc, &x->box, u, (int32_t *)w, NULL);
}

static tsr_err migrate(tsr_run_ctx *x, const tsr_migrate_plan *plan, const tsr_field *src,
                       tsr_field *dst) {
  return tsr_migrate_field_into(plan, x->comm, src, dst);
}

/* The exchange and the per-box scratch arrays follow the new box. */
static tsr_err relayout(tsr_run_ctx *x) {
  tsr_halo_destroy(&x->halo);
  free(x->scratch);
  free(x->coords);
  x->scratch = x->coords = NULL;
  TSR_CALL(setup(x));
  return prepare(x);
}

const tsr_backend_ops tsr_backend_host = {
    .name = "host", .mem = TSR_MEM_HOST, .setup = setup, .teardown = teardown,
    .prepare = prepare, .eval = eval, .boundary = boundary, .halo_begin = halo_begin,
    .halo_end = halo_end, .halo_new = halo_new, .stage = stage, .steps = steps,
    .steps_max = steps_max, .upload = upload,
    .download = download,
    .norms = norms, .sync = sync,
    .stage_create = stage_create, .stage_copy = stage_copy, .stage_destroy = stage_destroy,
    .work = work, .migrate = migrate, .relayout = relayout};
