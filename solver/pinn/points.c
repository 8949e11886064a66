#include "solver/pinn/points.h"

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
  int64_t interior, face[6], initial, iface;
  int self_periodic[3];
} counts;

static void count(const tsr_case *c, const tsr_pinn_sub *sub, counts *k) {
  memset(k, 0, sizeof *k);
  int timed = !tsr_models[c->model].steady;
  double plo[3], phi[3];
  tsr_box b = tsr_pinn_sub_box(c, sub, plo, phi);
  double share = (double)box_cells(c, &b) / (double)cells_of(c);
  k->interior = c->pinn.interior ? scaled(c->pinn.interior, share)
                                 : box_cells(c, &b) * (timed ? c->pinn.times : 1);
  for (int a = 0; a < c->dim && c->pinn.boundary > 0; ++a) {
    double fs = 1.0;
    for (int t = 0; t < c->dim; ++t)
      if (t != a) fs *= (double)tsr_box_len(&b, t) / c->cells[t];
    long nb = scaled(c->pinn.boundary, fs);
    if (c->periodic[a]) {
      k->self_periodic[a] = b.lo[a] == 0 && b.hi[a] == c->cells[a];
      if (k->self_periodic[a]) k->face[2 * a] = k->face[2 * a + 1] = nb;
    } else {
      if (b.lo[a] == 0) k->face[2 * a] = nb;
      if (b.hi[a] == c->cells[a]) k->face[2 * a + 1] = nb;
    }
  }
  if (timed) k->initial = scaled(c->pinn.initial, share);
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
  int timed = !tsr_models[c->model].steady, nt = 1;
  int64_t n = k.interior + k.initial + k.iface;
  for (int f = 0; f < 2 * c->dim; ++f) {
    n += k.face[f];
    if (k.face[f] && !(c->periodic[f / 2] && f % 2)) ++nt;
  }
  if (timed) ++nt;
  if (k.iface) ++nt;
  if (nterm) *nterm = nt;
  if (nif) *nif = k.iface > INT32_MAX ? -1 : (int)k.iface;
  return n > INT32_MAX ? -1 : (int)n;
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

/* Point coordinates uniform in [lo, hi] (space) and [0, end], from stream s, index i. */
static void random_point(const tsr_case *c, const tsr_pinn_batch *b, const double *lo,
                         const double *hi, uint64_t draw, uint64_t s, uint64_t i, double *x) {
  for (int a = 0; a < b->nin; ++a) {
    double u = tsr_pinn_uniform(c->pinn.seed, draw, s, (uint64_t)b->nin * i + (uint64_t)a);
    x[a] = a < b->nspace ? lo[a] + u * (hi[a] - lo[a]) : u * c->time.end;
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
    if (b->timed) x[b->nspace] = ((double)lev + 0.5) * (c->time.end / c->pinn.times);
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
      if (b->timed) x[b->nspace] = ((double)lev + 0.5) * (c->time.end / c->pinn.times);
    }
  }
  for (int i = 0; i < n; ++i) b->F[q0 - b->if_start + i] = 2 * a + p->side;
}

static tsr_err interface(const tsr_case *c, const tsr_pinn_sub *sub, tsr_pinn_batch *b, int p0) {
  int np = pieces(c, sub, NULL);
  if (!np) return TSR_OK;
  piece *pc = malloc((size_t)np * sizeof *pc);
  tsr_pinn_peers *pr = &b->peers;
  pr->peer = malloc((size_t)np * sizeof *pr->peer);
  pr->start = malloc((size_t)np * sizeof *pr->start);
  pr->count = malloc((size_t)np * sizeof *pr->count);
  b->F = malloc((size_t)(b->if_count ? b->if_count : 1) * sizeof *b->F);
  if (!pc || !pr->peer || !pr->start || !pr->count || !b->F) {
    free(pc);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory for interface points");
  }
  pieces(c, sub, pc);
  int q = p0;
  for (int i = 0; i < np; ++i) {
    int n = (int)piece_points(c, &pc[i], b->timed);
    int owner = sub->layout->owner[pc[i].nb];
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
  add_term(b, TSR_LOSS_INTERFACE, TSR_PINN_GROUP_INTERFACE, p0, b->if_count, 1.0, "interface");
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
  int nif = 0;
  int n = tsr_pinn_batch_size(c, sub, NULL, &nif);
  TSR_CHECK(n > 0 && nif >= 0, TSR_ERR_INPUT, "%s: the PINN's batch would have more than 2^31 "
            "points; give fewer (pinn.points)", c->path);
  counts k;
  count(c, sub, &k);
  /* a box's random streams are its own (one subdomain: the streams of the whole grid) */
  uint64_t so = nbox_of(sub) > 1 ? 1024 * (uint64_t)(sub->box + 1) : 0;
  b->npts = n;
  b->X = calloc((size_t)n * b->nin, sizeof *b->X);
  b->T = calloc((size_t)n * b->ncomp, sizeof *b->T);
  if (!b->X || !b->T) {
    tsr_pinn_batch_free(b);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                       "out of memory: %d PINN points; give fewer (pinn.points)", n);
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
  if (b->timed && !err) {
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
  if (!err) err = interface(c, sub, b, p);
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
  TSR_CHECK(*X, TSR_ERR_MEMORY, "out of memory: %lld grid points", (long long)nc);
  for (int64_t p = 0; p < nc; ++p) {
    double *x = *X + (size_t)nin * p;
    int idx[3] = {(int)(p % len[0]), (int)(p / len[0] % len[1]),
                  (int)(p / ((int64_t)len[0] * len[1]))};
    for (int a = 0; a < c->dim; ++a) x[a] = centre(c, a, b.lo[a] + idx[a]);
    if (nin > c->dim) x[c->dim] = t;
  }
  return TSR_OK;
}
