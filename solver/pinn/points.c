#include "solver/pinn/points.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/case_expr.h"

const char *const tsr_pinn_group_names[TSR_PINN_NGROUP] = {"pde", "boundary", "initial"};

/* Streams of the generator: one per use, so adding points of one kind never moves another's. */
enum { S_INTERIOR = 0, S_FACE = 16, S_INITIAL = 64 };

static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double tsr_pinn_uniform(uint64_t seed, uint64_t draw, uint64_t stream, uint64_t i) {
  uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ draw);
  h = splitmix64(h ^ (stream << 40) ^ i);
  return (double)(h >> 11) * 0x1.0p-53;
}

void tsr_pinn_shape(const tsr_case *c, int *nin, double in_scale[4], double in_shift[4]) {
  int timed = !tsr_models[c->model].steady;
  *nin = c->dim + timed;
  for (int j = 0; j < 4; ++j) {
    in_scale[j] = 1.0;
    in_shift[j] = 0.0;
  }
  for (int a = 0; a < c->dim; ++a) {
    in_scale[a] = 2.0 / (c->hi[a] - c->lo[a]);
    in_shift[a] = -(c->hi[a] + c->lo[a]) / (c->hi[a] - c->lo[a]);
  }
  if (timed) {
    in_scale[c->dim] = 2.0 / c->time.end;
    in_shift[c->dim] = -1.0;
  }
}

static int64_t cells_of(const tsr_case *c) {
  int64_t n = 1;
  for (int a = 0; a < c->dim; ++a) n *= c->cells[a];
  return n;
}

int tsr_pinn_batch_size(const tsr_case *c, int *nterm) {
  int timed = !tsr_models[c->model].steady, nt = 1;
  int64_t n = c->pinn.interior ? c->pinn.interior : cells_of(c) * (timed ? c->pinn.times : 1);
  for (int a = 0; a < c->dim && c->pinn.boundary > 0; ++a) {
    n += 2 * c->pinn.boundary;
    nt += c->periodic[a] ? 1 : 2;
  }
  if (timed) {
    n += c->pinn.initial;
    ++nt;
  }
  if (nterm) *nterm = nt;
  return n > INT32_MAX ? -1 : (int)n;
}

void tsr_pinn_batch_free(tsr_pinn_batch *b) {
  free(b->X);
  free(b->T);
  memset(b, 0, sizeof *b);
}

static tsr_loss_term *add_term(tsr_pinn_batch *b, int kind, int group, int start, int count,
                               double w, const char *name) {
  tsr_loss_term *t = &b->term[b->nterm];
  *t = (tsr_loss_term){.kind = kind, .start = start, .count = count, .weight = w};
  b->group[b->nterm] = group;
  snprintf(b->name[b->nterm], sizeof b->name[0], "%s", name);
  ++b->nterm;
  return t;
}

/* Values of the expressions ex[0..ncomp-1] (NULL text: 0) at points [p0, p0 + n) into T. */
static tsr_err targets(const tsr_case *c, const tsr_case_expr *ex, tsr_pinn_batch *b, int p0,
                       int n, int t_zero) {
  for (int k = 0; k < b->ncomp; ++k) {
    tsr_expr *e = NULL;
    if (ex[k].text) TSR_CALL(tsr_case_compile(c, &ex[k], &e));
    for (int p = p0; p < p0 + n; ++p) {
      const double *x = b->X + (size_t)b->nin * p;
      double t = b->timed && !t_zero ? x[b->nspace] : 0.0;
      b->T[k + b->ncomp * p] =
          e ? tsr_expr_eval(e, x[0], b->nspace > 1 ? x[1] : 0.0, b->nspace > 2 ? x[2] : 0.0, t)
            : 0.0;
    }
    tsr_expr_destroy(&e);
  }
  return TSR_OK;
}

/* Point p's coordinates uniform in the box and [0, end], from stream s, index i. */
static void random_point(const tsr_case *c, const tsr_pinn_batch *b, uint64_t draw, uint64_t s,
                         uint64_t i, double *x) {
  for (int a = 0; a < b->nin; ++a) {
    double u = tsr_pinn_uniform(c->pinn.seed, draw, s, (uint64_t)b->nin * i + (uint64_t)a);
    x[a] = a < b->nspace ? c->lo[a] + u * (c->hi[a] - c->lo[a]) : u * c->time.end;
  }
}

static void interior(const tsr_case *c, tsr_pinn_batch *b, uint64_t draw, int n) {
  if (c->pinn.interior) {
    for (int p = 0; p < n; ++p) random_point(c, b, draw, S_INTERIOR, (uint64_t)p, b->X + b->nin * p);
    return;
  }
  /* the cell centres, x fastest, then the time levels (cell centres of [0, end]) */
  int64_t nc = cells_of(c);
  for (int p = 0; p < n; ++p) {
    double *x = b->X + (size_t)b->nin * p;
    int64_t cell = p % nc, lev = p / nc;
    int idx[3] = {(int)(cell % c->cells[0]), (int)(cell / c->cells[0] % c->cells[1]),
                  (int)(cell / ((int64_t)c->cells[0] * c->cells[1]))};
    for (int a = 0; a < b->nspace; ++a)
      x[a] = c->lo[a] + (idx[a] + 0.5) * ((c->hi[a] - c->lo[a]) / c->cells[a]);
    if (b->timed) x[b->nspace] = ((double)lev + 0.5) * (c->time.end / c->pinn.times);
  }
}

tsr_err tsr_pinn_batch_build(const tsr_case *c, uint64_t draw, tsr_pinn_batch *b) {
  memset(b, 0, sizeof *b);
  b->timed = !tsr_models[c->model].steady;
  b->nspace = c->dim;
  b->nin = b->nspace + b->timed;
  b->ncomp = c->ncomp;
  int n = tsr_pinn_batch_size(c, NULL);
  TSR_CHECK(n > 0, TSR_ERR_INPUT, "%s: the PINN's batch would have more than 2^31 points; give "
            "fewer (pinn.points)", c->path);
  b->npts = n;
  b->X = calloc((size_t)n * b->nin, sizeof *b->X);
  b->T = calloc((size_t)n * b->ncomp, sizeof *b->T);
  if (!b->X || !b->T) {
    tsr_pinn_batch_free(b);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "out of memory: %d PINN points; give fewer (pinn.points)", n);
  }
  int ni = c->pinn.interior ? (int)c->pinn.interior
                            : (int)(cells_of(c) * (b->timed ? c->pinn.times : 1));
  interior(c, b, draw, ni);
  add_term(b, TSR_LOSS_PDE, TSR_PINN_GROUP_PDE, 0, ni, c->pinn.w_pde, "pde");
  tsr_err err = targets(c, c->source, b, 0, ni, 0);
  int p = ni, nb = (int)c->pinn.boundary;
  for (int a = 0; a < b->nspace && nb > 0 && !err; ++a) {
    /* boundary points do not move between draws: draw 0 always */
    for (int i = 0; i < 2 * nb; ++i) {
      double *x = b->X + (size_t)b->nin * (p + i);
      int side = i >= nb;
      random_point(c, b, 0, S_FACE + 2 * a + (c->periodic[a] ? 0 : side),
                   (uint64_t)(c->periodic[a] ? i % nb : i - side * nb), x);
      x[a] = side ? c->hi[a] : c->lo[a];
    }
    char name[16];
    if (c->periodic[a]) {
      snprintf(name, sizeof name, "%c periodic", "xyz"[a]);
      tsr_loss_term *t = add_term(b, TSR_LOSS_PERIODIC, TSR_PINN_GROUP_BOUNDARY, p, nb,
                                  c->pinn.w_boundary, name);
      t->axis = a;
    } else {
      for (int side = 0; side < 2 && !err; ++side) {
        const tsr_case_bc *bc = &c->bc[2 * a + side];
        int kind = bc->type == TSR_BC_NEUMANN ? TSR_LOSS_NEUMANN : TSR_LOSS_DIRICHLET;
        tsr_loss_term *t = add_term(b, kind, TSR_PINN_GROUP_BOUNDARY, p + side * nb, nb,
                                    c->pinn.w_boundary, tsr_case_face_names[2 * a + side]);
        t->axis = a;
        t->side = side;
        err = targets(c, bc->value, b, p + side * nb, nb, 0);
      }
    }
    p += 2 * nb;
  }
  if (b->timed && !err) {
    int n0 = (int)c->pinn.initial;
    for (int i = 0; i < n0; ++i) {
      double *x = b->X + (size_t)b->nin * (p + i);
      random_point(c, b, 0, S_INITIAL, (uint64_t)i, x);
      x[b->nspace] = 0.0;
    }
    add_term(b, TSR_LOSS_INITIAL, TSR_PINN_GROUP_INITIAL, p, n0, c->pinn.w_initial, "initial");
    err = targets(c, c->initial, b, p, n0, 1);
  }
  if (err) tsr_pinn_batch_free(b);
  return err;
}

tsr_err tsr_pinn_grid_points(const tsr_case *c, double t, double **X, int64_t *n) {
  int nin;
  double sc[4], sh[4];
  tsr_pinn_shape(c, &nin, sc, sh);
  int64_t nc = cells_of(c);
  *n = nc;
  *X = malloc((size_t)nc * nin * sizeof **X);
  TSR_CHECK(*X, TSR_ERR_MEMORY, "out of memory: %lld grid points", (long long)nc);
  for (int64_t p = 0; p < nc; ++p) {
    double *x = *X + (size_t)nin * p;
    int idx[3] = {(int)(p % c->cells[0]), (int)(p / c->cells[0] % c->cells[1]),
                  (int)(p / ((int64_t)c->cells[0] * c->cells[1]))};
    for (int a = 0; a < c->dim; ++a)
      x[a] = c->lo[a] + (idx[a] + 0.5) * ((c->hi[a] - c->lo[a]) / c->cells[a]);
    if (nin > c->dim) x[c->dim] = t;
  }
  return TSR_OK;
}
