#include "solver/pinn/points.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/case_expr.h"

const char *const tsr_pinn_group_names[TSR_PINN_NGROUP] = {"pde", "boundary", "initial",
                                                           "interface"};

/* Streams of the generator: one per use, so adding points of one kind never moves another's. */
enum { S_INTERIOR = 0, S_FACE = 16, S_INITIAL = 64, S_IFACE = 96 };

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

double tsr_pinn_face_coord(const tsr_case *c, int a, int i) {
  if (i <= 0) return c->lo[a];
  if (i >= c->cells[a]) return c->hi[a];
  return c->lo[a] + i * ((c->hi[a] - c->lo[a]) / c->cells[a]);
}

static double centre(const tsr_case *c, int a, int i) {
  return c->lo[a] + (i + 0.5) * ((c->hi[a] - c->lo[a]) / c->cells[a]);
}

tsr_err tsr_pinn_partition(const tsr_case *c, int nranks, tsr_layout *layout) {
  memset(layout, 0, sizeof *layout);
  TSR_CHECK(!c->decomp.nweights || c->decomp.nweights == nranks, TSR_ERR_INPUT,
            "%s: decomposition.weights: %d weights given but the run has %d ranks; give one "
            "weight per rank", c->path, c->decomp.nweights, nranks);
  tsr_part_opts po = {.kind = c->decomp.partition, .min_width = 1,
                      .weights = c->decomp.nweights ? c->decomp.weights : NULL};
  for (int d = 0; d < 3; ++d) po.grid[d] = c->decomp.ranks[d] > 0 ? c->decomp.ranks[d] : 1;
  int cells[3] = {c->cells[0], c->dim > 1 ? c->cells[1] : 1, c->dim > 2 ? c->cells[2] : 1};
  return tsr_partition(c->dim < 2 ? 2 : c->dim, cells, c->periodic, nranks, &po, layout);
}

static int nbox_of(const tsr_pinn_sub *sub) { return sub && sub->layout ? sub->layout->nbox : 1; }
static int nslab_of(const tsr_pinn_sub *sub) { return sub && sub->nslab > 1 ? sub->nslab : 1; }

static double slab_face(const tsr_case *c, int nslab, int k) {
  if (k <= 0) return 0.0;
  if (k >= nslab) return c->time.end;
  return c->time.end * (double)k / (double)nslab;
}

void tsr_pinn_slab_span(const tsr_case *c, const tsr_pinn_sub *sub, double *t0, double *t1) {
  int n = nslab_of(sub), k = n > 1 ? sub->slab : 0;
  *t0 = slab_face(c, n, k);
  *t1 = slab_face(c, n, k + 1);
}

int tsr_pinn_slab_of(const tsr_case *c, int nslab, double t) {
  int k = 0;
  while (k + 1 < nslab && t >= slab_face(c, nslab, k + 1)) ++k;
  return k;
}

tsr_box tsr_pinn_sub_box(const tsr_case *c, const tsr_pinn_sub *sub, double plo[3],
                         double phi[3]) {
  tsr_box b = tsr_box_make(3, c->cells);
  if (sub && sub->layout) b = sub->layout->boxes[sub->box];
  for (int a = 0; a < 3; ++a) {
    plo[a] = a < c->dim ? tsr_pinn_face_coord(c, a, b.lo[a]) : c->lo[a];
    phi[a] = a < c->dim ? tsr_pinn_face_coord(c, a, b.hi[a]) : c->hi[a];
  }
  return b;
}

void tsr_pinn_shape(const tsr_case *c, const tsr_pinn_sub *sub, int *nin, double in_scale[4],
                    double in_shift[4]) {
  int timed = !tsr_models[c->model].steady;
  double lo[3], hi[3];
  tsr_pinn_sub_box(c, sub, lo, hi);
  *nin = c->dim + timed;
  for (int j = 0; j < 4; ++j) {
    in_scale[j] = 1.0;
    in_shift[j] = 0.0;
  }
  for (int a = 0; a < c->dim; ++a) {
    in_scale[a] = 2.0 / (hi[a] - lo[a]);
    in_shift[a] = -(hi[a] + lo[a]) / (hi[a] - lo[a]);
  }
  if (timed && nslab_of(sub) > 1) {
    double t0, t1;
    tsr_pinn_slab_span(c, sub, &t0, &t1);
    in_scale[c->dim] = 2.0 / (t1 - t0);
    in_shift[c->dim] = -(t1 + t0) / (t1 - t0);
  } else if (timed) {
    in_scale[c->dim] = 2.0 / c->time.end;
    in_shift[c->dim] = -1.0;
  }
}

static int64_t cells_of(const tsr_case *c) {
  int64_t n = 1;
  for (int a = 0; a < c->dim; ++a) n *= c->cells[a];
  return n;
}

static int64_t box_cells(const tsr_case *c, const tsr_box *b) {
  int64_t n = 1;
  for (int a = 0; a < c->dim; ++a) n *= tsr_box_len(b, a);
  return n;
}

/* n scaled by the share `part` of the whole (1: n itself), at least 1 when n is. */
static long scaled(long n, double part) {
  if (part >= 1.0 || n == 0) return n;
  long m = (long)(n * part + 0.5);
  return m < 1 ? 1 : m;
}

/* One face piece shared with a neighbour box: this box's face (axis, side), the neighbour, the
 * tangential cells [lo, hi) and the key both sides draw its random points from. */
typedef struct {
  int nb, axis, side, lo[3], hi[3];
  uint64_t key;
} piece;

/* The pieces of box me in canonical order (neighbour, axis, the lower box's side); *n of them
 * into out (NULL: count only). */
static int pieces(const tsr_case *c, const tsr_pinn_sub *sub, piece *out) {
  if (nbox_of(sub) < 2) return 0;
  const tsr_layout *L = sub->layout;
  const tsr_box *m = &L->boxes[sub->box];
  int n = 0;
  for (int q = 0; q < L->nbox; ++q) {
    if (q == sub->box) continue;
    const tsr_box *o = &L->boxes[q];
    for (int a = 0; a < c->dim; ++a)
      for (int sl = 0; sl < 2; ++sl) { /* the lower box's side: both sides list alike */
        int side = sub->box < q ? sl : 1 - sl;
        int fm = side ? m->hi[a] : m->lo[a], fo = side ? o->lo[a] : o->hi[a];
        int touch = fm == fo || (c->periodic[a] && ((side && fm == c->cells[a] && fo == 0) ||
                                                    (!side && fm == 0 && fo == c->cells[a])));
        if (!touch) continue;
        piece p = {.nb = q, .axis = a, .side = side};
        int ok = 1;
        for (int t = 0; t < 3; ++t) {
          p.lo[t] = m->lo[t] > o->lo[t] ? m->lo[t] : o->lo[t];
          p.hi[t] = m->hi[t] < o->hi[t] ? m->hi[t] : o->hi[t];
          if (t != a && p.lo[t] >= p.hi[t]) ok = 0;
        }
        if (!ok) continue;
        int lb = sub->box < q ? sub->box : q, hb = sub->box < q ? q : sub->box;
        p.key = (((uint64_t)lb * (uint64_t)L->nbox + (uint64_t)hb) * 3 + (uint64_t)a) * 2 +
                (uint64_t)sl;
        if (out) out[n] = p;
        ++n;
      }
  }
  return n;
}

/* Points of one piece. */
static int64_t piece_points(const tsr_case *c, const piece *p, int timed) {
  if (c->pinn.iface) return c->pinn.iface;
  int64_t n = timed ? c->pinn.times : 1;
  for (int t = 0; t < c->dim; ++t)
    if (t != p->axis) n *= p->hi[t] - p->lo[t];
  return n;
}

/* Counts of each kind of point of the subdomain. */
typedef struct {
  int64_t interior, face[6], initial, iface, slab_lo, slab_hi;
  int self_periodic[3];
} counts;

static void count(const tsr_case *c, const tsr_pinn_sub *sub, counts *k) {
  memset(k, 0, sizeof *k);
  int timed = !tsr_models[c->model].steady;
  double plo[3], phi[3];
  tsr_box b = tsr_pinn_sub_box(c, sub, plo, phi);
  double share = (double)box_cells(c, &b) / (double)cells_of(c);
  int ns = nslab_of(sub), slab = ns > 1 ? sub->slab : 0;
  k->interior = c->pinn.interior ? scaled(c->pinn.interior, share / ns)
                                 : box_cells(c, &b) * (timed ? c->pinn.times : 1);
  for (int a = 0; a < c->dim && c->pinn.boundary > 0; ++a) {
    double fs = 1.0;
    for (int t = 0; t < c->dim; ++t)
      if (t != a) fs *= (double)tsr_box_len(&b, t) / c->cells[t];
    long nb = scaled(c->pinn.boundary, fs / ns);
    if (c->periodic[a]) {
      k->self_periodic[a] = b.lo[a] == 0 && b.hi[a] == c->cells[a];
      if (k->self_periodic[a]) k->face[2 * a] = k->face[2 * a + 1] = nb;
    } else {
      if (b.lo[a] == 0) k->face[2 * a] = nb;
      if (b.hi[a] == c->cells[a]) k->face[2 * a + 1] = nb;
    }
  }
  if (timed && slab == 0) k->initial = scaled(c->pinn.initial, share);
  if (ns > 1 && slab > 0) k->slab_lo = box_cells(c, &b);
  if (ns > 1 && slab < ns - 1 && !sub->causal) k->slab_hi = box_cells(c, &b);
  int np = pieces(c, sub, NULL);
  if (np) {
    piece *pc = malloc((size_t)np * sizeof *pc);
    if (!pc) {
      k->iface = INT64_MAX / 4; /* refused as too many points */
      return;
    }
    pieces(c, sub, pc);
    for (int i = 0; i < np; ++i) k->iface += piece_points(c, &pc[i], timed);
    free(pc);
  }
}

int tsr_pinn_batch_size(const tsr_case *c, const tsr_pinn_sub *sub, int *nterm, int *nif) {
  counts k;
  count(c, sub, &k);
  int nt = 1;
  int64_t n = k.interior + k.initial + k.iface + k.slab_lo + k.slab_hi;
  for (int f = 0; f < 2 * c->dim; ++f) {
    n += k.face[f];
    if (k.face[f] && !(c->periodic[f / 2] && f % 2)) ++nt;
  }
  if (k.initial) ++nt;
  if (k.iface) ++nt;
  if (k.slab_lo) ++nt;
  int64_t ni = k.iface + k.slab_lo + k.slab_hi;
  if (nterm) *nterm = nt;
  if (nif) *nif = ni > INT32_MAX ? -1 : (int)ni;
  return n > INT32_MAX ? -1 : (int)n;
}

tsr_err tsr_pinn_batch_fits(const tsr_case *c, int n, int nif) {
  TSR_CHECK(n > 0 && nif >= 0, TSR_ERR_INPUT, "%s: the PINN's batch would have more than 2^31 "
            "points: give fewer (pinn.points), or fewer grid.cells or pinn.points.times where "
            "the interior points are the cell centres", c->path);
  return TSR_OK;
}

void tsr_pinn_batch_free(tsr_pinn_batch *b) {
  free(b->X);
  free(b->T);
  free(b->F);
  free(b->peers.peer);
  free(b->peers.start);
  free(b->peers.count);
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
    tsr_err err = TSR_OK;
    for (int p = p0; p < p0 + n && !err; ++p) {
      const double *x = b->X + (size_t)b->nin * p;
      double t = b->timed && !t_zero ? x[b->nspace] : 0.0;
      const double at[3] = {x[0], b->nspace > 1 ? x[1] : 0.0, b->nspace > 2 ? x[2] : 0.0};
      double v = e ? tsr_expr_eval(e, at[0], at[1], at[2], t) : 0.0;
      b->T[k + b->ncomp * p] = v;
      /* a target that is not finite made the loss NaN, blamed on the learning rate */
      if (!isfinite(v)) err = tsr_case_nonfinite(c, &ex[k], v, at, b->timed, t);
    }
    tsr_expr_destroy(&e);
    TSR_CALL(err);
  }
  return TSR_OK;
}

/* Point coordinates uniform in [lo, hi] (space) and [0, end], from stream s, index i. */
static void random_point(const tsr_case *c, const tsr_pinn_batch *b, const double *lo,
                         const double *hi, uint64_t draw, uint64_t s, uint64_t i, double *x) {
  for (int a = 0; a < b->nin; ++a) {
    double u = tsr_pinn_uniform(c->pinn.seed, draw, s, (uint64_t)b->nin * i + (uint64_t)a);
    x[a] = a < b->nspace ? lo[a] + u * (hi[a] - lo[a]) : b->t0 + u * (b->t1 - b->t0);
  }
}

static void interior(const tsr_case *c, tsr_pinn_batch *b, const double *lo, const double *hi,
                     uint64_t so, uint64_t draw, int n) {
  if (c->pinn.interior) {
    for (int p = 0; p < n; ++p)
      random_point(c, b, lo, hi, draw, S_INTERIOR + so, (uint64_t)p, b->X + b->nin * p);
    return;
  }
  /* the box's cell centres, x fastest, then the time levels (cell centres of [0, end]) */
  const tsr_box *bx = &b->box;
  int64_t nc = box_cells(c, bx);
  int len[3] = {tsr_box_len(bx, 0), tsr_box_len(bx, 1), tsr_box_len(bx, 2)};
  for (int p = 0; p < n; ++p) {
    double *x = b->X + (size_t)b->nin * p;
    int64_t cell = p % nc, lev = p / nc;
    int idx[3] = {(int)(cell % len[0]), (int)(cell / len[0] % len[1]),
                  (int)(cell / ((int64_t)len[0] * len[1]))};
    for (int a = 0; a < b->nspace; ++a) x[a] = centre(c, a, bx->lo[a] + idx[a]);
    if (b->timed) x[b->nspace] = b->t0 + ((double)lev + 0.5) * ((b->t1 - b->t0) / c->pinn.times);
  }
}

/* The interface points of piece p from point q0 on. */
static void iface_points(const tsr_case *c, tsr_pinn_batch *b, const piece *p, int q0, int n) {
  int a = p->axis;
  double fx = tsr_pinn_face_coord(c, a, p->side ? b->box.hi[a] : b->box.lo[a]);
  if (c->pinn.iface) {
    double lo[3], hi[3];
    for (int t = 0; t < 3; ++t) {
      lo[t] = t < c->dim ? tsr_pinn_face_coord(c, t, p->lo[t]) : 0.0;
      hi[t] = t < c->dim ? tsr_pinn_face_coord(c, t, p->hi[t]) : 0.0;
    }
    for (int i = 0; i < n; ++i) {
      double *x = b->X + (size_t)b->nin * (q0 + i);
      random_point(c, b, lo, hi, p->key, S_IFACE, (uint64_t)i, x);
      x[a] = fx;
    }
  } else {
    int len[3] = {1, 1, 1};
    for (int t = 0; t < c->dim; ++t)
      if (t != a) len[t] = p->hi[t] - p->lo[t];
    int64_t nf = (int64_t)len[0] * len[1] * len[2];
    for (int i = 0; i < n; ++i) {
      double *x = b->X + (size_t)b->nin * (q0 + i);
      int64_t cell = i % nf, lev = i / nf;
      int idx[3] = {(int)(cell % len[0]), (int)(cell / len[0] % len[1]),
                    (int)(cell / ((int64_t)len[0] * len[1]))};
      for (int t = 0; t < b->nspace; ++t) x[t] = t == a ? fx : centre(c, t, p->lo[t] + idx[t]);
      if (b->timed) x[b->nspace] = b->t0 + ((double)lev + 0.5) * ((b->t1 - b->t0) / c->pinn.times);
    }
  }
  for (int i = 0; i < n; ++i) b->F[q0 - b->if_start + i] = 2 * a + p->side;
}

/* The slab face points at time t: the box's cell centres (x fastest), from point q0 on. */
static void slab_points(const tsr_case *c, tsr_pinn_batch *b, double t, int side, int q0, int n) {
  const tsr_box *bx = &b->box;
  int len[3] = {tsr_box_len(bx, 0), tsr_box_len(bx, 1), tsr_box_len(bx, 2)};
  for (int i = 0; i < n; ++i) {
    double *x = b->X + (size_t)b->nin * (q0 + i);
    int idx[3] = {i % len[0], i / len[0] % len[1], i / (len[0] * len[1])};
    for (int a = 0; a < b->nspace; ++a) x[a] = centre(c, a, bx->lo[a] + idx[a]);
    x[b->nspace] = t;
    b->F[q0 - b->if_start + i] = 2 * b->nspace + side;
  }
}

static tsr_err interface(const tsr_case *c, const tsr_pinn_sub *sub, tsr_pinn_batch *b, int p0,
                         const counts *k) {
  int np = pieces(c, sub, NULL);
  if (!b->if_count) return TSR_OK;
  piece *pc = malloc((size_t)(np ? np : 1) * sizeof *pc);
  tsr_pinn_peers *pr = &b->peers;
  pr->peer = malloc((size_t)(np + 2) * sizeof *pr->peer);
  pr->start = malloc((size_t)(np + 2) * sizeof *pr->start);
  pr->count = malloc((size_t)(np + 2) * sizeof *pr->count);
  b->F = malloc((size_t)(b->if_count ? b->if_count : 1) * sizeof *b->F);
  if (!pc || !pr->peer || !pr->start || !pr->count || !b->F) {
    free(pc);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory for interface points");
  }
  pieces(c, sub, pc);
  int q = p0;
  for (int i = 0; i < np; ++i) {
    int n = (int)piece_points(c, &pc[i], b->timed);
    int owner = sub->rank0 + sub->layout->owner[pc[i].nb];
    if (!pr->npeer || pr->peer[pr->npeer - 1] != owner) {
      pr->peer[pr->npeer] = owner;
      pr->start[pr->npeer] = q - p0;
      pr->count[pr->npeer] = 0;
      ++pr->npeer;
    }
    pr->count[pr->npeer - 1] += n;
    iface_points(c, b, &pc[i], q, n);
    q += n;
  }
  free(pc);
  pr->nspace_peer = pr->npeer;
  b->if_space = q - p0;
  if (b->if_space)
    add_term(b, TSR_LOSS_INTERFACE, TSR_PINN_GROUP_INTERFACE, p0, b->if_space, 1.0, "interface");
  /* the slab faces: the same box of the slab before (at t0) and after (at t1) */
  int me = sub ? sub->rank0 + sub->layout->owner[sub->box] : 0, nbox = nbox_of(sub);
  for (int side = 0; side < 2; ++side) {
    int n = (int)(side ? k->slab_hi : k->slab_lo);
    if (!n) continue;
    pr->peer[pr->npeer] = side ? me + nbox : me - nbox;
    pr->start[pr->npeer] = q - p0;
    pr->count[pr->npeer] = n;
    ++pr->npeer;
    slab_points(c, b, side ? b->t1 : b->t0, side, q, n);
    if (!side)
      add_term(b, TSR_LOSS_SLAB, TSR_PINN_GROUP_INITIAL, q, n, c->pinn.w_initial, "slab initial");
    q += n;
  }
  return targets(c, c->source, b, p0, b->if_count, 0);
}

tsr_err tsr_pinn_batch_build(const tsr_case *c, const tsr_pinn_sub *sub, uint64_t draw,
                             tsr_pinn_batch *b) {
  memset(b, 0, sizeof *b);
  b->timed = !tsr_models[c->model].steady;
  b->nspace = c->dim;
  b->nin = b->nspace + b->timed;
  b->ncomp = c->ncomp;
  double lo[3], hi[3];
  b->box = tsr_pinn_sub_box(c, sub, lo, hi);
  tsr_pinn_slab_span(c, sub, &b->t0, &b->t1);
  int nif = 0;
  int n = tsr_pinn_batch_size(c, sub, NULL, &nif);
  TSR_CALL(tsr_pinn_batch_fits(c, n, nif));
  counts k;
  count(c, sub, &k);
  /* a box's random streams are its own (one subdomain: the streams of the whole grid) */
  uint64_t so = nbox_of(sub) > 1 || nslab_of(sub) > 1
                    ? 1024 * ((uint64_t)(nslab_of(sub) > 1 ? sub->slab : 0) * (uint64_t)nbox_of(sub) +
                              (uint64_t)sub->box + 1)
                    : 0;
  b->npts = n;
  b->X = calloc((size_t)n * b->nin, sizeof *b->X);
  b->T = calloc((size_t)n * b->ncomp, sizeof *b->T);
  if (!b->X || !b->T) {
    tsr_pinn_batch_free(b);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "%d PINN points; give fewer (pinn.points)", n);
  }
  int ni = (int)k.interior;
  interior(c, b, lo, hi, so, draw, ni);
  add_term(b, TSR_LOSS_PDE, TSR_PINN_GROUP_PDE, 0, ni, c->pinn.w_pde, "pde");
  tsr_err err = targets(c, c->source, b, 0, ni, 0);
  int p = ni;
  for (int a = 0; a < b->nspace && !err; ++a) {
    int nb[2] = {(int)k.face[2 * a], (int)k.face[2 * a + 1]};
    /* boundary points do not move between draws: draw 0 always */
    if (c->periodic[a]) {
      if (!k.self_periodic[a] || !nb[0]) continue;
      for (int i = 0; i < 2 * nb[0]; ++i) {
        double *x = b->X + (size_t)b->nin * (p + i);
        int side = i >= nb[0];
        random_point(c, b, lo, hi, 0, S_FACE + so + 2 * a, (uint64_t)(i % nb[0]), x);
        x[a] = side ? hi[a] : lo[a];
      }
      char name[16];
      snprintf(name, sizeof name, "%c periodic", "xyz"[a]);
      tsr_loss_term *t = add_term(b, TSR_LOSS_PERIODIC, TSR_PINN_GROUP_BOUNDARY, p, nb[0],
                                  c->pinn.w_boundary, name);
      t->axis = a;
      p += 2 * nb[0];
      continue;
    }
    for (int side = 0; side < 2 && !err; ++side) {
      if (!nb[side]) continue;
      for (int i = 0; i < nb[side]; ++i) {
        double *x = b->X + (size_t)b->nin * (p + i);
        random_point(c, b, lo, hi, 0, S_FACE + so + 2 * a + side, (uint64_t)i, x);
        x[a] = side ? hi[a] : lo[a];
      }
      const tsr_case_bc *bc = &c->bc[2 * a + side];
      int kind = bc->type == TSR_BC_NEUMANN ? TSR_LOSS_NEUMANN : TSR_LOSS_DIRICHLET;
      tsr_loss_term *t = add_term(b, kind, TSR_PINN_GROUP_BOUNDARY, p, nb[side],
                                  c->pinn.w_boundary, tsr_case_face_names[2 * a + side]);
      t->axis = a;
      t->side = side;
      err = targets(c, bc->value, b, p, nb[side], 0);
      p += nb[side];
    }
  }
  if (b->timed && !err && k.initial) {
    int n0 = (int)k.initial;
    for (int i = 0; i < n0; ++i) {
      double *x = b->X + (size_t)b->nin * (p + i);
      random_point(c, b, lo, hi, 0, S_INITIAL + so, (uint64_t)i, x);
      x[b->nspace] = 0.0;
    }
    add_term(b, TSR_LOSS_INITIAL, TSR_PINN_GROUP_INITIAL, p, n0, c->pinn.w_initial, "initial");
    err = targets(c, c->initial, b, p, n0, 1);
    p += n0;
  }
  b->if_start = p;
  b->if_count = nif;
  if (!err) err = interface(c, sub, b, p, &k);
  if (err) tsr_pinn_batch_free(b);
  return err;
}

tsr_err tsr_pinn_grid_points(const tsr_case *c, const tsr_pinn_sub *sub, double t, double **X,
                             int64_t *n) {
  int nin;
  double sc[4], sh[4], lo[3], hi[3];
  tsr_pinn_shape(c, sub, &nin, sc, sh);
  tsr_box b = tsr_pinn_sub_box(c, sub, lo, hi);
  int64_t nc = box_cells(c, &b);
  int len[3] = {tsr_box_len(&b, 0), tsr_box_len(&b, 1), tsr_box_len(&b, 2)};
  *n = nc;
  *X = malloc((size_t)(nc ? nc : 1) * nin * sizeof **X);
  TSR_CHECK(*X, TSR_ERR_MEMORY, "%lld grid points", (long long)nc);
  for (int64_t p = 0; p < nc; ++p) {
    double *x = *X + (size_t)nin * p;
    int idx[3] = {(int)(p % len[0]), (int)(p / len[0] % len[1]),
                  (int)(p / ((int64_t)len[0] * len[1]))};
    for (int a = 0; a < c->dim; ++a) x[a] = centre(c, a, b.lo[a] + idx[a]);
    if (nin > c->dim) x[c->dim] = t;
  }
  return TSR_OK;
}
