/* Evaluation of an expression over a grid of points, from the syntax tree that expr.c built
 * and muparser evaluates point by point. Bitwise agreement with muparser rests on three
 * facts: each node is one IEEE operation (+ - * /, negation) or one call of the same libm
 * wrapper muparser calls (tsr_expr_funs), both on doubles, no contraction
 * (-ffp-contract=off); muparser, which sees every variable behind an opaque function (see
 * expr.c), does exactly the tree's operations, folding only constant subtrees, and a fold is
 * the same operation on the same doubles; and an operation's result depends on its operands
 * only, so computing it once for many points, or in SIMD lanes, gives the same bits.
 *
 * Speed comes from the second half of that last fact. A node's value varies along the axes
 * whose coordinate it reads (its mask); it is computed once per distinct value of those
 * coordinates. Nodes that vary along every axis of the grid, x and another ("row nodes"), are
 * computed one x row at a time into per-thread row buffers, rows shared among OpenMP threads;
 * every other node is computed beforehand into an array over its own axes (at most a plane
 * in 3D). */
#include "io/expr.h"
#include "io/expr_impl.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>

typedef struct {
  int mask;          /* axes (bit d) along which the value varies on this grid */
  int slot;          /* row nodes: index of its buffer in a row scratch; else -1 */
  const double *val; /* other nodes: values over its axes, at i*st[0] + j*st[1] + k*st[2] */
  ptrdiff_t st[3];   /* 0 along axes outside mask */
} gnode;

/* One node's operation on scalars: what muparser's bytecode does for it. */
static double apply(const tsr_expr_node *n, double a, double b) {
  switch (n->kind) {
  case N_NEG: return -a;
  case N_ADD: return a + b;
  case N_SUB: return a - b;
  case N_MUL: return a * b;
  case N_DIV: return a / b;
  default: /* N_FUN */
    return tsr_expr_funs[n->idx].arity == 1 ? tsr_expr_funs[n->idx].f1(a)
                                            : tsr_expr_funs[n->idx].f2(a, b);
  }
}

/* An operand within one row: a vector along x (p) or one value for the whole row (s). */
typedef struct {
  const double *p;
  double s;
} operand;

static operand row_operand(const gnode *g, const double *buf, size_t nx, int j, int k) {
  if (g->slot >= 0) return (operand){buf + (size_t)g->slot * nx, 0.0};
  const double *v = g->val + j * g->st[1] + k * g->st[2];
  return g->mask & 1 ? (operand){v, 0.0} : (operand){NULL, *v};
}

/* d[i] = a op b along a row; loops kept simple so that the compiler vectorises them. */
#define ROW_LOOP(OP)                                                                           \
  do {                                                                                         \
    if (a.p && b.p)                                                                            \
      for (size_t i = 0; i < n; ++i) d[i] = a.p[i] OP b.p[i];                                  \
    else if (a.p)                                                                              \
      for (size_t i = 0; i < n; ++i) d[i] = a.p[i] OP b.s;                                     \
    else                                                                                       \
      for (size_t i = 0; i < n; ++i) d[i] = a.s OP b.p[i];                                     \
  } while (0)

static void row_apply(const tsr_expr_node *nd, size_t n, operand a, operand b, double *d) {
  switch (nd->kind) {
  case N_ADD: ROW_LOOP(+); return;
  case N_SUB: ROW_LOOP(-); return;
  case N_MUL: ROW_LOOP(*); return;
  case N_DIV: ROW_LOOP(/); return;
  case N_NEG:
    for (size_t i = 0; i < n; ++i) d[i] = -a.p[i];
    return;
  default: {
    const tsr_expr_fun *f = &tsr_expr_funs[nd->idx];
    if (f->arity == 1)
      for (size_t i = 0; i < n; ++i) d[i] = f->f1(a.p[i]);
    else
      for (size_t i = 0; i < n; ++i) d[i] = f->f2(a.p ? a.p[i] : a.s, b.p ? b.p[i] : b.s);
  }
  }
}

/* Values of node i over its own axes into v (strides g[i].st), from its children's arrays. */
static void precompute(const tsr_expr *e, const gnode *g, const int *n, int i, double *v) {
  const tsr_expr_node *nd = &e->nodes[i];
  const gnode *ga = &g[nd->a], *gb = nd->b >= 0 ? &g[nd->b] : ga;
  int m = g[i].mask, ni = m & 1 ? n[0] : 1, nj = m & 2 ? n[1] : 1, nk = m & 4 ? n[2] : 1;
  const ptrdiff_t *s = g[i].st;
  /* threads pay off for a plane of libm calls, not for a plane of multiplications */
  size_t work = (size_t)ni * nj * nk * (nd->kind == N_FUN ? 16 : 1);
#pragma omp parallel for collapse(2) schedule(static) if (work >= 65536)
  for (int k = 0; k < nk; ++k)
    for (int j = 0; j < nj; ++j)
      for (int x = 0; x < ni; ++x) {
        double a = ga->val[x * ga->st[0] + j * ga->st[1] + k * ga->st[2]];
        double b = gb->val[x * gb->st[0] + j * gb->st[1] + k * gb->st[2]];
        v[x * s[0] + j * s[1] + k * s[2]] = apply(nd, a, b);
      }
}

tsr_err tsr_expr_eval_grid(const tsr_expr *e, const tsr_expr_points *grid, double t,
                           double *out) {
  TSR_CHECK(e && grid && out, TSR_ERR_INTERNAL, "tsr_expr_eval_grid: NULL argument");
  const int *n = grid->n;
  if (n[0] <= 0 || n[1] <= 0 || n[2] <= 0) return TSR_OK;
  static const double zero = 0.0;
  int nn = e->root + 1, vary = 0, nrownode = 0;
  for (int d = 0; d < 3; ++d) vary |= grid->coord[d] && n[d] > 1 ? 1 << d : 0;
  /* row nodes exist only where x and another axis vary: others fit in a plane or a line */
  int rows_vary = (vary & 1) && (vary & 6);
  gnode *g;
  TSR_ALLOC(g, nn, "expression grid nodes");
  size_t need = 0;
  for (int i = 0; i < nn; ++i) {
    const tsr_expr_node *nd = &e->nodes[i];
    gnode *gi = &g[i];
    gi->slot = -1;
    if (nd->kind == N_VAR) {
      int d = nd->idx;
      gi->mask = d < 3 ? vary & 1 << d : 0;
      gi->val = d == 3 ? &t : grid->coord[d] ? grid->coord[d] : &zero;
      if (gi->mask) gi->st[d] = 1;
    } else if (nd->kind == N_NUM || nd->kind == N_PI) {
      gi->val = &nd->val;
    } else if (nd->kind == N_PARAM) {
      gi->val = &e->param[nd->idx];
    } else {
      gi->mask = g[nd->a].mask | (nd->b >= 0 ? g[nd->b].mask : 0);
      if (rows_vary && gi->mask == vary) {
        gi->slot = nrownode++;
      } else {
        size_t sz = 1;
        for (int d = 0; d < 3; ++d)
          if (gi->mask & 1 << d) gi->st[d] = (ptrdiff_t)sz, sz *= (size_t)n[d];
        need += sz;
      }
    }
  }
  int nth = omp_get_max_threads();
  size_t nx = (size_t)n[0];
  double *store = malloc((need + (size_t)nth * nrownode * nx + 1) * sizeof *store);
  if (!store) {
    free(g);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "out of memory evaluating '%.200s' over %d x %d x %d points", e->text,
                       n[0], n[1], n[2]);
  }
  double *next = store;
  for (int i = 0; i < nn; ++i) {
    int k = e->nodes[i].kind;
    if (k == N_VAR || k == N_NUM || k == N_PI || k == N_PARAM || g[i].slot >= 0) continue;
    precompute(e, g, n, i, next);
    g[i].val = next;
    size_t sz = 1;
    for (int d = 0; d < 3; ++d) sz *= g[i].mask & 1 << d ? (size_t)n[d] : 1;
    next += sz;
  }
  double *rowbuf = next;
  const gnode *groot = &g[e->root];
  const ptrdiff_t *os = grid->stride;
  long nrows = (long)n[1] * n[2];
  /* a face or a small box is not worth waking the threads for */
  size_t work = (size_t)nrows * nx * (size_t)(nrownode + 1);
#pragma omp parallel for schedule(static) if (work >= 32768)
  for (long r = 0; r < nrows; ++r) {
    int j = (int)(r % n[1]), k = (int)(r / n[1]);
    double *o = out + j * os[1] + k * os[2];
    if (groot->slot < 0) { /* the value does not vary along rows: copy it out */
      const double *v = groot->val + j * groot->st[1] + k * groot->st[2];
      for (size_t i = 0; i < nx; ++i) o[(ptrdiff_t)i * os[0]] = v[(ptrdiff_t)i * groot->st[0]];
      continue;
    }
    double *buf = rowbuf + (size_t)omp_get_thread_num() * nrownode * nx;
    for (int i = 0; i < nn; ++i) {
      if (g[i].slot < 0) continue;
      const tsr_expr_node *nd = &e->nodes[i];
      operand a = row_operand(&g[nd->a], buf, nx, j, k);
      operand b = nd->b >= 0 ? row_operand(&g[nd->b], buf, nx, j, k) : a;
      double *d = i == e->root && os[0] == 1 ? o : buf + (size_t)g[i].slot * nx;
      row_apply(nd, nx, a, b, d);
    }
    if (os[0] != 1) {
      const double *v = buf + (size_t)groot->slot * nx;
      for (size_t i = 0; i < nx; ++i) o[(ptrdiff_t)i * os[0]] = v[i];
    }
  }
  free(store);
  free(g);
  return TSR_OK;
}

tsr_err tsr_expr_find_nonfinite(const tsr_expr *e, const tsr_expr_points *grid, double t,
                                int *found, double xyz[3], double *value) {
  *found = 0;
  const int *n = grid->n;
  if (n[0] <= 0 || n[1] <= 0 || n[2] <= 0) return TSR_OK;
  /* a plane at a time: a whole 3D box of scratch would double the memory of a run that just
   * failed; the search itself runs only where something already went wrong */
  tsr_expr_points plane = *grid;
  plane.n[2] = 1;
  plane.stride[0] = 1, plane.stride[1] = n[0], plane.stride[2] = 0;
  double *v;
  TSR_ALLOC(v, (size_t)n[0] * n[1], "an expression's values over a plane");
  tsr_err err = TSR_OK;
  for (int k = 0; k < n[2] && !err && !*found; ++k) {
    plane.coord[2] = grid->coord[2] ? grid->coord[2] + k : NULL;
    err = tsr_expr_eval_grid(e, &plane, t, v);
    for (size_t p = 0; !err && p < (size_t)n[0] * n[1]; ++p) {
      if (isfinite(v[p])) continue;
      const int idx[3] = {(int)(p % (size_t)n[0]), (int)(p / (size_t)n[0]), k};
      for (int d = 0; d < 3; ++d) xyz[d] = grid->coord[d] ? grid->coord[d][idx[d]] : 0.0;
      *value = v[p];
      *found = 1;
      break;
    }
  }
  free(v);
  return err;
}
