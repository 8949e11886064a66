/* The motion of costly cells for the rebalancer (decomp/rebalance_impl.h).
 *
 * Why: measured on 4 CPU ranks with the ignition front (bench/README.md, Rebalancer), the
 * front, about 3 cells thick, moves about 3 cells in a window of 10 steps. Counted only at
 * the decision, a box the front had just left counted a hundredth of the work it did in the
 * window and read as ten times slower than it was (and a box it entered the reverse), and a
 * partition cut where the front was lay behind it for all of the next window: the windows
 * after a migration measured 0.3-0.45 where the rates were right. So the map is also counted
 * at the window's start, and each costly block's displacement over the window is the shift
 * of the costly cells' centroid around it between the two maps (a nearest-match misses most
 * of a shift shorter than the front is thick). Deterministic: every rank runs this on the
 * same bits in the same order (built with -ffp-contract=off). */
#include "decomp/rebalance_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double tsr_rb_box_sum(const tsr_rebalance_costmap *m, const double *val, const tsr_box *box) {
  int blo[3], bhi[3];
  tsr_rb_block_range(m, box, blo, bhi);
  double s = 0.0;
  for (int kb = blo[2]; kb < bhi[2]; ++kb)
    for (int jb = blo[1]; jb < bhi[1]; ++jb)
      for (int ib = blo[0]; ib < bhi[0]; ++ib) s += tsr_rb_part(m, val, ib, jb, kb, box);
  return s;
}

static double extra_of(const tsr_rebalance_costmap *m, int64_t i) {
  return (double)(m->cost[i] - tsr_rb_block_cells(m, i));
}

/* Summed-volume tables of a map's extra (counted where positive) and its first moments: for
 * block (i, j, k), s[q] over the blocks [0, i] x [0, j] x [0, k], q = mass, x, y, z moment;
 * stored with a zero layer in front on every axis. */
typedef struct {
  int n[3];
  double *s;
} moments;

static int64_t at(const moments *mo, int i, int j, int k) {
  return (((int64_t)k * (mo->n[1] + 1) + j) * (mo->n[0] + 1) + i) * 4;
}

static tsr_err moments_build(const tsr_rebalance_costmap *m, moments *mo) {
  for (int d = 0; d < 3; ++d) mo->n[d] = m->nb[d];
  size_t len = (size_t)(m->nb[0] + 1) * (m->nb[1] + 1) * (m->nb[2] + 1) * 4;
  mo->s = calloc(len, sizeof *mo->s);
  TSR_CHECK(mo->s, TSR_ERR_MEMORY, "out of memory for the rebalancer's motion tables");
  for (int k = 0; k < m->nb[2]; ++k)
    for (int j = 0; j < m->nb[1]; ++j)
      for (int i = 0; i < m->nb[0]; ++i) {
        double x = extra_of(m, tsr_rb_block_index(m, i, j, k));
        double w = x > 0.0 ? x : 0.0, v[4] = {w, w * i, w * j, w * k};
        double *o = mo->s + at(mo, i + 1, j + 1, k + 1);
        const double *a = mo->s + at(mo, i, j + 1, k + 1), *b = mo->s + at(mo, i + 1, j, k + 1);
        const double *c = mo->s + at(mo, i + 1, j + 1, k), *ab = mo->s + at(mo, i, j, k + 1);
        const double *ac = mo->s + at(mo, i, j + 1, k), *bc = mo->s + at(mo, i + 1, j, k);
        const double *abc = mo->s + at(mo, i, j, k);
        for (int q = 0; q < 4; ++q)
          o[q] = v[q] + a[q] + b[q] + c[q] - ab[q] - ac[q] - bc[q] + abc[q];
      }
  return TSR_OK;
}

/* The mass and moments of the blocks [lo, hi) (inclusion-exclusion over the tables). */
static void moments_of(const moments *mo, const int lo[3], const int hi[3], double out[4]) {
  for (int q = 0; q < 4; ++q) out[q] = 0.0;
  for (int c = 0; c < 8; ++c) {
    int p[3], sign = 1;
    for (int d = 0; d < 3; ++d) {
      int up = (c >> d) & 1;
      p[d] = up ? hi[d] : lo[d];
      if (!up) sign = -sign;
    }
    const double *s = mo->s + at(mo, p[0], p[1], p[2]);
    for (int q = 0; q < 4; ++q) out[q] += sign * s[q];
  }
}

/* The displacement of the costly cells around block p from `from` to `to`: the shift of their
 * centroid inside the blocks within TSR_RB_MOTION_RADIUS of p; zero where either has none. */
static void shift(const tsr_rebalance_costmap *m, const moments *from, const moments *to,
                  const int p[3], double v[3]) {
  int lo[3], hi[3];
  for (int d = 0; d < 3; ++d) {
    int r = d < m->dim ? TSR_RB_MOTION_RADIUS : 0;
    lo[d] = p[d] - r < 0 ? 0 : p[d] - r;
    hi[d] = p[d] + r + 1 > m->nb[d] ? m->nb[d] : p[d] + r + 1;
    v[d] = 0.0;
  }
  double a[4], b[4];
  moments_of(from, lo, hi, a);
  moments_of(to, lo, hi, b);
  if (!(a[0] > 0.0 && b[0] > 0.0)) return;
  for (int d = 0; d < m->dim; ++d) v[d] = b[1 + d] / b[0] - a[1 + d] / a[0];
}

/* Spreads x over the blocks p + v f for f in (f0, f1), one point per block of the path (at
 * most 64), each rounded to a block; points outside the grid are dropped. */
static void deposit(const tsr_rebalance_costmap *m, double *val, const int p[3],
                    const double v[3], double f0, double f1, double x) {
  double len = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) * fabs(f1 - f0);
  int k = 1 + (int)ceil(len);
  if (k > 64) k = 64;
  for (int s = 0; s < k; ++s) {
    double f = f0 + (f1 - f0) * ((double)s + 0.5) / (double)k;
    int q[3], in = 1;
    for (int d = 0; d < 3; ++d) {
      q[d] = p[d] + (int)floor(v[d] * f + 0.5);
      in &= q[d] >= 0 && q[d] < m->nb[d];
    }
    if (in) val[tsr_rb_block_index(m, q[0], q[1], q[2])] += x / (double)k;
  }
}

tsr_err tsr_rb_motion(const tsr_rebalance_costmap *end, const tsr_rebalance_costmap *start,
                      double ahead, double *past, double *next) {
  const int64_t n = end->nblock;
  if (past) memset(past, 0, (size_t)n * sizeof *past);
  if (next) memset(next, 0, (size_t)n * sizeof *next);
  if (!start) {
    for (int64_t i = 0; i < n; ++i) {
      double x = extra_of(end, i);
      if (past) past[i] = x;
      if (next) next[i] = x;
    }
    return TSR_OK;
  }
  moments ms = {{0}, NULL}, me = {{0}, NULL};
  tsr_err e = moments_build(start, &ms);
  if (!e) e = moments_build(end, &me);
  if (e) {
    free(ms.s);
    free(me.s);
    return e;
  }
  for (int kb = 0; kb < end->nb[2]; ++kb)
    for (int jb = 0; jb < end->nb[1]; ++jb)
      for (int ib = 0; ib < end->nb[0]; ++ib) {
        const int p[3] = {ib, jb, kb};
        const int64_t i = tsr_rb_block_index(end, ib, jb, kb);
        const double xe = extra_of(end, i), xs = extra_of(start, i);
        double v[3];
        /* the window's mean: half from the end's blocks traced back along the path they came,
         * half from the start's traced on along the path they went (a block that appears or
         * vanishes in the window counts half, the mean of its two ends) */
        if (xe > 0.0) {
          shift(end, &ms, &me, p, v);
          double back[3] = {-v[0], -v[1], -v[2]};
          if (past) deposit(end, past, p, back, 1.0, 0.0, 0.5 * xe);
          if (next) deposit(end, next, p, v, 0.0, ahead, xe);
        } else {
          if (past) past[i] += 0.5 * xe;
          if (next) next[i] += xe;
        }
        if (!past) continue;
        if (xs > 0.0) {
          shift(end, &ms, &me, p, v);
          deposit(end, past, p, v, 0.0, 1.0, 0.5 * xs);
        } else {
          past[i] += 0.5 * xs;
        }
      }
  free(ms.s);
  free(me.s);
  return TSR_OK;
}
