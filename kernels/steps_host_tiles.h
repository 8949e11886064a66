/* The tiles of tsr_steps_host (kernels/steps_host.c): m steps of forward Euler, SSP-RK2,
 * SSP-RK3 or RK4 in one pass over memory by overlapped tiles.
 *
 *
 * m steps of S stages are L = m S levels, one stage each (kernels/steps.h). The region is cut
 * into tiles. A thread takes a tile T and computes level l (1 .. L) over T grown by
 * (L - l) * radius, clipped to the cells the stage-by-stage path updates at level l (the region
 * grown by (L - l) * radius on the sides that are not physical faces): level 1 reads `in`,
 * levels 1 .. L-1 write buffers of the thread's (a cache's worth), and level L writes T into
 * `out`. Neighbouring tiles recompute their overlap, each from the same inputs, so every cell
 * gets the bits the stage-by-stage path gives it: the per-cell code is stage_host.c's
 * (tsr_model_rhs on a pointer into double values, or on a 3x3(x3) double window gathered from
 * single ones, then tsr_stage_update), and the buffers hold values in the field's precision,
 * rounded as a store into the field rounds them. Between two levels the ghost layers beyond
 * the physical faces are refilled in the buffers as tsr_bc_fill fills them in the field
 * (tsr_ghost_value of the mirror cell).
 *
 * The SSP stages after a step's first, and RK4's first three, also read the step's base (the
 * level before the step: `in` for the first step) at their own cell, so a base level is kept
 * until the last stage that reads it has. RK4's stages also carry a running sum (acc) at their
 * own cell: the step's first stage writes it, the second and third update it in place, the
 * fourth reads it; it is stored in the field's precision after each, as stage_host.c stores it
 * in its acc field, so that fp32 runs round it as the stage-by-stage path does. 2D tiles are
 * blocks: buffers the size of the tile and its halo, two in turn for Euler, three for the
 * others, where a level writes neither its input nor its step's base, and for RK4 a fourth
 * that holds acc. 3D tiles are columns of the whole z range, streamed along z (a wavefront):
 * each level l < L keeps a ring of a few z planes (RK4 one more ring a step for acc), and
 * computes its next plane as soon as level l - 1 has the planes that plane reads and no plane
 * of a ring it writes that a later level still reads is overwritten (level l + 1's stencil; the
 * base of its step's later stages, at their plane; acc until the step's fourth stage), so a
 * column's cells cross memory once while only a few planes per level stay in cache, and the
 * tiles overlap along x and y only (3D blocks recompute too much of their halo:
 * bench/README.md, host_stencil's fusion).
 *
 * Included twice, with TSR_STEPS_HOST_RK4 0 by steps_host.c (forward Euler and the SSP
 * schemes) and 1 by steps_host_rk4.c (RK4): each level's per-cell code is compiled with its
 * stage kind a constant for every model, dimension and precision, so that the update folds
 * into the row loop, and RK4's four kinds in a file of their own compile alongside the others
 * (in one file, the sanitizers' build took over 10 minutes on it). */
#ifndef TSR_STEPS_HOST_RK4
#error "define TSR_STEPS_HOST_RK4 (0 or 1) before including kernels/steps_host_tiles.h"
#endif

#include "kernels/steps.h"

#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/stage_cell_host.h"

/* Where cells live: a field (its gbox and strides) or a thread's buffer. */
typedef struct {
  tsr_box b;
  ptrdiff_t sy, sz, sc;
} geom;

static inline ptrdiff_t at(const geom *g, int c, int i, int j, int k) {
  return (ptrdiff_t)c * g->sc + (ptrdiff_t)(k - g->b.lo[2]) * g->sz +
         (ptrdiff_t)(j - g->b.lo[1]) * g->sy + (ptrdiff_t)(i - g->b.lo[0]);
}

/* The geometry shared by every tile of a call. */
typedef struct {
  int dim, L, S, r;    /* levels, stages a step, radius */
  tsr_box region, box; /* box: the field's, whose faces bc's are */
  int face[6];         /* side 2 d + s of the region lies on one of bc's faces */
  int tile[3], nt[3];  /* longest tile and tiles per axis */
  ptrdiff_t ntile;
  int ring;            /* 3D: planes per ring */
  size_t slot;         /* 3D: values per plane of a ring (all components) */
  int nbuf;            /* 2D: buffers a thread (RK4: the last holds acc) */
  size_t bufcells;     /* values of a thread's buffers */
} plan;

/* b grown by g on every side of the first dim axes that is not a physical face. */
static tsr_box grow_free(const plan *p, const tsr_box *b, int g) {
  tsr_box o = *b;
  for (int d = 0; d < p->dim; ++d) {
    if (!p->face[2 * d]) o.lo[d] -= g;
    if (!p->face[2 * d + 1]) o.hi[d] += g;
  }
  return o;
}

/* The tile's cells of level l: the tile grown by (L - l) r within what level l updates. */
static tsr_box step_box(const plan *p, const tsr_box *t, int l) {
  tsr_box g = tsr_box_grow(t, p->dim, (p->L - l) * p->r);
  tsr_box rl = grow_free(p, &p->region, (p->L - l) * p->r);
  return tsr_box_intersect(&g, &rl);
}

/* Tile number n of the region: axes split into nt equal parts (lengths differ by one). */
static tsr_box tile_box(const plan *p, ptrdiff_t n) {
  int idx[3];
  idx[0] = (int)(n % p->nt[0]);
  idx[1] = (int)((n / p->nt[0]) % p->nt[1]);
  idx[2] = (int)(n / ((ptrdiff_t)p->nt[0] * p->nt[1]));
  tsr_box t;
  for (int d = 0; d < 3; ++d) {
    int64_t len = tsr_box_len(&p->region, d);
    t.lo[d] = p->region.lo[d] + (int)(len * idx[d] / p->nt[d]);
    t.hi[d] = p->region.lo[d] + (int)(len * (idx[d] + 1) / p->nt[d]);
  }
  return t;
}

/* Cells of a level and where they live: a field's values or a thread's buffer. */
typedef struct {
  char *p;
  geom g;
} span;

/* One row of n cells of a stage of kind `kind`: stage_host.c's row(), with the input read at
 * oi through k's strides (a field's or a buffer's), the base at ob (component stride bsc;
 * read by the kinds that use it), RK4's acc at oa (component stride asc; read by the kinds
 * that use it, written back in place by all of them but the last), the source at os
 * (component stride ssc) and the result stored at oo (component stride osc). */
static inline __attribute__((always_inline)) void
row(int model, int ncomp, int kind, int prec, int has_src, double dt, const tsr_cell_coef *k,
    int n, const void *restrict in, ptrdiff_t oi, const void *restrict base, ptrdiff_t ob,
    ptrdiff_t bsc, void *restrict acc, ptrdiff_t oa, ptrdiff_t asc, const void *restrict src,
    ptrdiff_t os, ptrdiff_t ssc, void *restrict out, ptrdiff_t oo, ptrdiff_t osc) {
  const ptrdiff_t sc = k->scomp;
  const tsr_cell_coef kw = tsr_cell_window_coef(k);
  for (int i = 0; i < n; ++i) {
    ptrdiff_t ai = oi + i;
    double r[TSR_MAX_COMP] = {0};
    tsr_cell_rhs_at(model, ncomp, prec, in, ai, k, &kw, r);
    for (int c = 0; c < ncomp; ++c) {
      double rc = has_src ? r[c] + tsr_cell_ld(prec, src, os + i + c * ssc) : r[c];
      double b = tsr_stage_uses_base(kind) ? tsr_cell_ld(prec, base, ob + i + c * bsc) : 0.0;
      double a = tsr_stage_uses_acc(kind) ? tsr_cell_ld(prec, acc, oa + i + c * asc) : 0.0;
      tsr_cell_st(prec, out, oo + i + c * osc,
                  tsr_stage_update(kind, dt, b, tsr_cell_ld(prec, in, ai + c * sc), rc, &a));
      if (tsr_stage_uses_acc(kind) && kind != TSR_STAGE_RK4_4)
        tsr_cell_st(prec, acc, oa + i + c * asc, a);
    }
  }
}

/* One level over the cells of t, from in (and base, and acc for RK4's kinds: NULL for the
 * others) into out; src is laid out as the field. */
static inline __attribute__((always_inline)) void
step(int model, int ncomp, int kind, int prec, const tsr_cell_coef *k0, double dt,
     const tsr_box *t, const span *in, const span *base, const span *acc, const void *src,
     const geom *gf, const span *out) {
  tsr_cell_coef k = *k0;
  k.sy = in->g.sy;
  k.sz = in->g.sz;
  k.scomp = in->g.sc;
  const int n = t->hi[0] - t->lo[0];
  for (int kk = t->lo[2]; kk < t->hi[2]; ++kk)
    for (int jj = t->lo[1]; jj < t->hi[1]; ++jj) {
      ptrdiff_t oi = at(&in->g, 0, t->lo[0], jj, kk), oo = at(&out->g, 0, t->lo[0], jj, kk);
      ptrdiff_t ob = at(&base->g, 0, t->lo[0], jj, kk);
      void *pa = tsr_stage_uses_acc(kind) ? acc->p : NULL;
      ptrdiff_t oa = tsr_stage_uses_acc(kind) ? at(&acc->g, 0, t->lo[0], jj, kk) : 0,
                asc = tsr_stage_uses_acc(kind) ? acc->g.sc : 0;
      if (src)
        row(model, ncomp, kind, prec, 1, dt, &k, n, in->p, oi, base->p, ob, base->g.sc, pa, oa,
            asc, src, at(gf, 0, t->lo[0], jj, kk), gf->sc, out->p, oo, out->g.sc);
      else
        row(model, ncomp, kind, prec, 0, dt, &k, n, in->p, oi, base->p, ob, base->g.sc, pa, oa,
            asc, NULL, 0, 0, out->p, oo, out->g.sc);
    }
}

/* step() with the kind a constant, so that its update folds in the row loop: the eight kinds
 * of a pass's levels (tsr_steps_kind), each compiled once a model, dimension and precision. */
static inline __attribute__((always_inline)) void
level(int model, int ncomp, int kind, int prec, const tsr_cell_coef *k, double dt,
      const tsr_box *t, const span *in, const span *base, const span *acc, const void *src,
      const geom *gf, const span *out) {
#define LEVEL_KIND(K) step(model, ncomp, K, prec, k, dt, t, in, base, acc, src, gf, out); break
  switch (kind) {
#if TSR_STEPS_HOST_RK4
  case TSR_STAGE_RK4_1: LEVEL_KIND(TSR_STAGE_RK4_1);
  case TSR_STAGE_RK4_2: LEVEL_KIND(TSR_STAGE_RK4_2);
  case TSR_STAGE_RK4_3: LEVEL_KIND(TSR_STAGE_RK4_3);
  default: LEVEL_KIND(TSR_STAGE_RK4_4);
#else
  case TSR_STAGE_SSP2_2: LEVEL_KIND(TSR_STAGE_SSP2_2);
  case TSR_STAGE_SSP3_2: LEVEL_KIND(TSR_STAGE_SSP3_2);
  case TSR_STAGE_SSP3_3: LEVEL_KIND(TSR_STAGE_SSP3_3);
  default: LEVEL_KIND(TSR_STAGE_EULER);
#endif
  }
#undef LEVEL_KIND
}

/* The ghost layers beyond the physical faces across axes below naxes that the cells of t read,
 * from the mirror cells of buffer buf (laid out as g), as tsr_bc_fill sets them in a field. */
static void refill(int prec, int ncomp, const plan *p, const tsr_steps_bc *bc, int naxes,
                   const tsr_box *t, void *buf, const geom *g) {
  for (int f = 0; f < bc->nface; ++f) {
    const tsr_bc_face *fi = &bc->face[f];
    const int d = fi->axis, t1 = fi->t1, t2 = fi->t2;
    if (d >= naxes) continue;
    if (fi->side == 0 ? t->lo[d] != p->box.lo[d] : t->hi[d] != p->box.hi[d]) continue;
    const int f1 = p->box.lo[t1] + fi->o1, f2 = p->box.lo[t2] + fi->o2;
    const int a0 = t->lo[t1] > f1 ? t->lo[t1] : f1, a1 = t->hi[t1] < f1 + fi->n1 ? t->hi[t1] : f1 + fi->n1;
    const int b0 = t->lo[t2] > f2 ? t->lo[t2] : f2, b1 = t->hi[t2] < f2 + fi->n2 ? t->hi[t2] : f2 + fi->n2;
    const int layers = fi->layers < p->r ? fi->layers : p->r;
    const size_t nf = (size_t)fi->n1 * fi->n2;
    for (int q = 0; q < ncomp; ++q)
      for (int b = b0; b < b1; ++b)
        for (int a = a0; a < a1; ++a) {
          double v = bc->val[f][q * nf + (size_t)(b - f2) * fi->n1 + (a - f1)];
          for (int l = 1; l <= layers; ++l) {
            int gi[3], mi[3];
            gi[t1] = mi[t1] = a;
            gi[t2] = mi[t2] = b;
            gi[d] = fi->side == 0 ? p->box.lo[d] - l : p->box.hi[d] - 1 + l;
            mi[d] = fi->side == 0 ? p->box.lo[d] + l - 1 : p->box.hi[d] - l;
            double mv = tsr_cell_ld(prec, buf, at(g, q, mi[0], mi[1], mi[2]));
            tsr_cell_st(prec, buf, at(g, q, gi[0], gi[1], gi[2]), tsr_ghost_value(fi->type, v, mv, l, fi->h));
          }
        }
  }
}

/* The L levels of one tile, buf holding p->nbuf buffers in p->bufcells values. */
static inline __attribute__((always_inline)) void
tile(int model, int ncomp, int prec, const plan *p, const tsr_cell_coef *k, double dt,
     const tsr_steps_bc *bc, const tsr_box *t, const tsr_field *in, const tsr_field *src,
     tsr_field *out, char *buf) {
  const geom gf = {in->gbox, in->sy, in->sz, in->scomp};
  /* the buffers: the tile's cells of level 1 and the ghost layers beyond the faces it meets */
  tsr_box t1 = step_box(p, t, 1);
  geom gb;
  gb.b = t1;
  for (int d = 0; d < p->dim; ++d) {
    if (p->face[2 * d] && t1.lo[d] == p->region.lo[d]) gb.b.lo[d] -= p->r;
    if (p->face[2 * d + 1] && t1.hi[d] == p->region.hi[d]) gb.b.hi[d] += p->r;
  }
  gb.sy = tsr_box_len(&gb.b, 0);
  gb.sz = gb.sy * tsr_box_len(&gb.b, 1);
  gb.sc = gb.sz * tsr_box_len(&gb.b, 2);
  const size_t bytes = p->bufcells / (size_t)p->nbuf * tsr_prec_size(in->prec);
  const span field = {in->data, gf};
  const void *ps = src ? src->data : NULL;
  /* RK4's acc: the last buffer, updated in place (each level's cells lie within the last's) */
  const span acc = {buf + (size_t)(p->nbuf - 1) * bytes, gb};
  /* the buffers that hold level l - 1 and the step's base (-1: in); level l writes one that
   * holds neither (with one stage a step they are the same: the two buffers in turn) */
  int cur = -1, base = -1;
  for (int l = 1; l <= p->L; ++l) {
    const int st = (l - 1) % p->S;
    const tsr_box tl = step_box(p, t, l);
    const span from = cur < 0 ? field : (span){buf + (size_t)cur * bytes, gb};
    if (l > 1 && bc) refill(prec, ncomp, p, bc, 3, &tl, from.p, &gb);
    if (st == 0) base = cur;
    int o = 0;
    while (o == cur || o == base) ++o;
    const span b = base < 0 ? field : (span){buf + (size_t)base * bytes, gb};
    const span to = l == p->L ? (span){out->data, gf} : (span){buf + (size_t)o * bytes, gb};
    level(model, ncomp, tsr_steps_kind(p->S, st), prec, k, dt, &tl, &from, &b, &acc, ps, &gf,
          &to);
    cur = o;
  }
}

/* 3D rings: plane z of a level lives in slot z mod K of its ring (K = p->ring), and slots
 * 0 .. 2r-1 are copied into slots K .. K+2r-1 when written, so that the 2r + 1 planes around
 * any plane lie at one stride (the per-cell code reads z neighbours at a fixed offset). */
static inline int slot_of(const plan *p, int z) {
  int s = z % p->ring;
  return s < 0 ? s + p->ring : s;
}

/* The layout of a ring (values from ring) for writing plane z, or for reading around it. */
static inline geom ring_geom(const plan *p, const geom *xy, int z, int reading) {
  geom g = *xy;
  g.b.lo[2] = reading ? z - (slot_of(p, z - p->r) + p->r) : z - slot_of(p, z);
  return g;
}

static void ring_copy(const plan *p, char *ring, int z, size_t es) {
  int s = slot_of(p, z);
  if (s < 2 * p->r)
    memcpy(ring + (size_t)(s + p->ring) * p->slot * es, ring + (size_t)s * p->slot * es,
           p->slot * es);
}

/* The ghost planes beyond a z face of box, over the cells of t (x, y) that read them, from
 * their mirror planes in ring (laid out as xy). */
static void refill_z(int prec, int ncomp, const plan *p, const tsr_steps_bc *bc, int f,
                     const tsr_box *t, char *ring, const geom *xy, size_t es) {
  const tsr_bc_face *fi = &bc->face[f]; /* a z face: t1 = x, t2 = y */
  const int f1 = p->box.lo[0] + fi->o1, f2 = p->box.lo[1] + fi->o2;
  const int a0 = t->lo[0] > f1 ? t->lo[0] : f1, a1 = t->hi[0] < f1 + fi->n1 ? t->hi[0] : f1 + fi->n1;
  const int b0 = t->lo[1] > f2 ? t->lo[1] : f2, b1 = t->hi[1] < f2 + fi->n2 ? t->hi[1] : f2 + fi->n2;
  const int layers = fi->layers < p->r ? fi->layers : p->r;
  const size_t nf = (size_t)fi->n1 * fi->n2;
  for (int l = 1; l <= layers; ++l) {
    const int gz = fi->side == 0 ? p->box.lo[2] - l : p->box.hi[2] - 1 + l;
    const int mz = fi->side == 0 ? p->box.lo[2] + l - 1 : p->box.hi[2] - l;
    const geom gg = ring_geom(p, xy, gz, 0), gm = ring_geom(p, xy, mz, 0);
    for (int q = 0; q < ncomp; ++q)
      for (int y = b0; y < b1; ++y)
        for (int x = a0; x < a1; ++x) {
          double v = bc->val[f][q * nf + (size_t)(y - f2) * fi->n1 + (x - f1)];
          double mv = tsr_cell_ld(prec, ring, at(&gm, q, x, y, mz));
          tsr_cell_st(prec, ring, at(&gg, q, x, y, gz), tsr_ghost_value(fi->type, v, mv, l, fi->h));
        }
    ring_copy(p, ring, gz, es);
  }
}

/* The L levels of one 3D column t (the region's z range), streamed along z: each pass over the
 * levels computes the next plane of every level whose inputs are there and whose rings have
 * room (level l + 1 reads planes z - r .. z + r of level l's ring; where l is a step's base, the
 * step's later stages that read it read its plane z; RK4's acc ring of a step is written at
 * plane z by its first stage and read there by the other three). */
static inline __attribute__((always_inline)) void
column(int model, int ncomp, int prec, const plan *p, const tsr_cell_coef *k, double dt,
       const tsr_steps_bc *bc, const tsr_box *t, const tsr_field *in, const tsr_field *src,
       tsr_field *out, char *buf) {
  const size_t es = tsr_prec_size(in->prec);
  const geom gf = {in->gbox, in->sy, in->sz, in->scomp};
  const int L = p->L, S = p->S, r = p->r;
  tsr_box tl[TSR_STEPS_MAX + 1];
  int next[TSR_STEPS_MAX + 1];
  for (int l = 1; l <= L; ++l) {
    tl[l] = step_box(p, t, l);
    next[l] = tl[l].lo[2];
  }
  /* a ring's planes: level 1's cells and the ghost layers beyond the x and y faces it meets */
  geom xy;
  xy.b = tl[1];
  for (int d = 0; d < 2; ++d) {
    if (p->face[2 * d] && tl[1].lo[d] == p->region.lo[d]) xy.b.lo[d] -= r;
    if (p->face[2 * d + 1] && tl[1].hi[d] == p->region.hi[d]) xy.b.hi[d] += r;
  }
  xy.sy = tsr_box_len(&xy.b, 0);
  xy.sc = xy.sy * tsr_box_len(&xy.b, 1);
  xy.sz = (ptrdiff_t)p->slot;
  int fz[2] = {-1, -1}; /* bc's z faces */
  for (int f = 0; bc && f < bc->nface; ++f)
    if (bc->face[f].axis == 2) fz[bc->face[f].side] = f;
  const size_t ring_bytes = (size_t)(p->ring + 2 * r) * p->slot * es;
  char *ring[TSR_STEPS_MAX]; /* level l's ring (l < L) */
  for (int l = 1; l < L; ++l) ring[l] = buf + (size_t)(l - 1) * ring_bytes;
  char *acc[TSR_STEPS_MAX / 4]; /* RK4: step n's acc ring, after the levels' */
  for (int n = 0; S == 4 && n < L / S; ++n)
    acc[n] = buf + (size_t)(L - 1) * ring_bytes + (size_t)n * p->ring * p->slot * es;
  const span field = {in->data, gf};
  const void *ps = src ? src->data : NULL;
  while (next[L] < tl[L].hi[2]) {
    int moved = 0;
    for (int l = 1; l <= L; ++l) {
      const int z = next[l];
      if (z >= tl[l].hi[2]) continue;
      if (l > 1) { /* level l - 1 has the planes z reads (beyond its last, its ghost planes) */
        int need = z + r < tl[l - 1].hi[2] - 1 ? z + r : tl[l - 1].hi[2] - 1;
        if (next[l - 1] <= need) continue;
      }
      const int top = fz[1] >= 0 && z == p->box.hi[2] - 1; /* then its ghost planes too */
      const int st = (l - 1) % S, b = l - 1 - st; /* b: the level of the step's base */
      if (l < L) { /* room: the planes z overwrites have been read */
        int keep = next[l + 1] - r;
        if (l % S == 0) /* a step's base: its later stages that read it do so at their plane */
          for (int j = l + 2; j <= l + S && j <= L; ++j)
            if (tsr_stage_uses_base(tsr_steps_kind(S, j - l - 1)))
              keep = next[j] < keep ? next[j] : keep;
        if ((top ? z + r : z) - p->ring >= keep) continue;
        /* RK4's first stage overwrites acc's plane z - ring: the step's other stages have
         * passed it (or it lies below their range: next starts at its low end) */
        if (S == 4 && st == 0) {
          int ka = next[l + 1];
          for (int j = l + 2; j <= l + 3; ++j) ka = next[j] < ka ? next[j] : ka;
          if (z - p->ring >= ka) continue;
        }
      }
      tsr_box pl = tl[l];
      pl.lo[2] = z;
      pl.hi[2] = z + 1;
      const geom at_z = ring_geom(p, &xy, z, 0), around_z = ring_geom(p, &xy, z, 1);
      const span from = l == 1 ? field : (span){ring[l - 1], around_z};
      const span base = b == 0 ? field : (span){ring[b], at_z};
      const span to = l == L ? (span){out->data, gf} : (span){ring[l], at_z};
      const span ac = {S == 4 ? acc[(l - 1) / S] : NULL, at_z};
      level(model, ncomp, tsr_steps_kind(S, st), prec, k, dt, &pl, &from, &base, &ac, ps, &gf,
            &to);
      if (l < L) {
        tsr_box nx = tl[l + 1];
        nx.lo[2] = z;
        nx.hi[2] = z + 1;
        if (bc) refill(prec, ncomp, p, bc, 2, &nx, to.p, &to.g);
        ring_copy(p, to.p, z, es);
        if (fz[0] >= 0 && z == p->box.lo[2] + r - 1)
          refill_z(prec, ncomp, p, bc, fz[0], &tl[l + 1], to.p, &xy, es);
        if (top) refill_z(prec, ncomp, p, bc, fz[1], &tl[l + 1], to.p, &xy, es);
      }
      next[l]++;
      moved = 1;
    }
    if (!moved) { /* cannot happen with p->ring >= ring_min (and an abort beats wrong bits) */
      fprintf(stderr, "tsr_steps_host: the z wavefront stalled (a bug)\n");
      abort();
    }
  }
}

static inline __attribute__((always_inline)) void
tiles(int model, int ncomp, int dim, int prec, const tsr_stage_desc *s, const plan *p,
      const tsr_steps_bc *bc, const tsr_field *in, const tsr_field *src, tsr_field *out,
      char *bufs, size_t per_thread) {
  tsr_cell_coef k = s->coef;
  k.dim = dim; /* a constant here, so the 3D terms of the stencil fold away in 2D */
  const double dt = s->dt;
  k.dt = dt;
  void *buf = bufs + per_thread * (size_t)omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
  for (ptrdiff_t n = 0; n < p->ntile; ++n) {
    tsr_box t = tile_box(p, n);
    if (dim == 3) column(model, ncomp, prec, p, &k, dt, bc, &t, in, src, out, buf);
    else tile(model, ncomp, prec, p, &k, dt, bc, &t, in, src, out, buf);
  }
}

static inline __attribute__((always_inline)) void
model_loop(int model, int ncomp, const tsr_stage_desc *s, const plan *p, const tsr_steps_bc *bc,
           const tsr_field *in, const tsr_field *src, tsr_field *out, char *bufs, size_t pt) {
  const int single = in->prec == TSR_PREC_SINGLE;
  if (p->dim == 3) {
    if (single) tiles(model, ncomp, 3, TSR_PREC_SINGLE, s, p, bc, in, src, out, bufs, pt);
    else tiles(model, ncomp, 3, TSR_PREC_DOUBLE, s, p, bc, in, src, out, bufs, pt);
  } else {
    if (single) tiles(model, ncomp, 2, TSR_PREC_SINGLE, s, p, bc, in, src, out, bufs, pt);
    else tiles(model, ncomp, 2, TSR_PREC_DOUBLE, s, p, bc, in, src, out, bufs, pt);
  }
}

/* The pass's tiles on nthreads threads, each with per_thread bytes of bufs: RK4's
 * (steps_host_rk4.c) or the other schemes' (this file's includer). */
void tsr_steps_host_rk4(const tsr_stage_desc *s, const plan *p, const tsr_steps_bc *bc,
                        const tsr_field *in, const tsr_field *src, tsr_field *out, char *bufs,
                        size_t per_thread, int nthreads);

static void pass(const tsr_stage_desc *s, const plan *p, const tsr_steps_bc *bc,
                 const tsr_field *in, const tsr_field *src, tsr_field *out, char *bufs,
                 size_t per_thread, int nthreads) {
#pragma omp parallel num_threads(nthreads)
  switch (s->model) {
  case TSR_MODEL_HEAT: model_loop(TSR_MODEL_HEAT, 1, s, p, bc, in, src, out, bufs, per_thread); break;
  case TSR_MODEL_ADVECTION_DIFFUSION:
    model_loop(TSR_MODEL_ADVECTION_DIFFUSION, 1, s, p, bc, in, src, out, bufs, per_thread);
    break;
  case TSR_MODEL_WAVE: model_loop(TSR_MODEL_WAVE, 2, s, p, bc, in, src, out, bufs, per_thread); break;
  case TSR_MODEL_GRAY_SCOTT:
    model_loop(TSR_MODEL_GRAY_SCOTT, 2, s, p, bc, in, src, out, bufs, per_thread);
    break;
  case TSR_MODEL_ALLEN_CAHN:
    model_loop(TSR_MODEL_ALLEN_CAHN, 1, s, p, bc, in, src, out, bufs, per_thread);
    break;
  case TSR_MODEL_IGNITION:
    model_loop(TSR_MODEL_IGNITION, 1, s, p, bc, in, src, out, bufs, per_thread);
    break;
  default: break; /* no explicit stage: out is left as it was */
  }
}
