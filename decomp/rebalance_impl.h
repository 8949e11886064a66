/* Private to decomp/rebalance*.c: the blocks of a cost map, the motion of its costly cells and
 * the work model's fit (decomp/rebalance.h says what they are for). */
#ifndef TSR_REBALANCE_IMPL_H
#define TSR_REBALANCE_IMPL_H

#include "decomp/rebalance.h"

/* Block (ib, jb, kb) as a box of cells, clipped to the grid. */
static inline tsr_box tsr_rb_block_box(const tsr_rebalance_costmap *m, int ib, int jb, int kb) {
  int idx[3] = {ib, jb, kb};
  tsr_box b;
  for (int d = 0; d < 3; ++d) {
    b.lo[d] = idx[d] * m->bs[d];
    b.hi[d] = b.lo[d] + m->bs[d] < m->cells[d] ? b.lo[d] + m->bs[d] : m->cells[d];
  }
  return b;
}

static inline int64_t tsr_rb_block_index(const tsr_rebalance_costmap *m, int ib, int jb,
                                         int kb) {
  return ((int64_t)kb * m->nb[1] + jb) * m->nb[0] + ib;
}

/* The range of blocks [blo, bhi) that box covers (box clipped to the grid; empty: blo = bhi). */
static inline void tsr_rb_block_range(const tsr_rebalance_costmap *m, const tsr_box *box,
                                      int blo[3], int bhi[3]) {
  for (int d = 0; d < 3; ++d) {
    int lo = box->lo[d] < 0 ? 0 : box->lo[d];
    int hi = box->hi[d] > m->cells[d] ? m->cells[d] : box->hi[d];
    blo[d] = lo / m->bs[d];
    bhi[d] = hi > lo ? (hi - 1) / m->bs[d] + 1 : blo[d];
  }
}

/* The cells of block i. */
static inline int64_t tsr_rb_block_cells(const tsr_rebalance_costmap *m, int64_t i) {
  int ib = (int)(i % m->nb[0]), jb = (int)(i / m->nb[0] % m->nb[1]);
  int kb = (int)(i / ((int64_t)m->nb[0] * m->nb[1]));
  tsr_box b = tsr_rb_block_box(m, ib, jb, kb);
  return tsr_box_cells(&b);
}

/* Block (ib, jb, kb)'s value (val[], or the map's count when val is NULL) inside box, in
 * proportion to the block's cells there. */
static inline double tsr_rb_part(const tsr_rebalance_costmap *m, const double *val, int ib,
                                 int jb, int kb, const tsr_box *box) {
  tsr_box bb = tsr_rb_block_box(m, ib, jb, kb), o = tsr_box_intersect(&bb, box);
  int64_t in = tsr_box_cells(&o), all = tsr_box_cells(&bb), i = tsr_rb_block_index(m, ib, jb, kb);
  double c = val ? val[i] : (double)m->cost[i];
  return in == all ? c : c * (double)in / (double)all;
}

/* The sum of val (one value per block of m; NULL: m->cost) inside box, blocks cut by the box
 * counting in proportion to their cells. */
double tsr_rb_box_sum(const tsr_rebalance_costmap *m, const double *val, const tsr_box *box);

/* The extra counts (beyond one per cell) of each block, followed as they move: past[b] their
 * mean over the span between start and end, next[b] their mean over the `ahead` spans after
 * end (ahead: steps ahead over steps of the span). Around each costly block the costly cells
 * moved in the span by the shift of their centroid (the blocks within TSR_RB_MOTION_RADIUS,
 * start against end), and keep moving so: past spreads the block's extra along the path it
 * came, next along the path it goes (cost carried out of the grid is dropped: a front that
 * leaves the grid ends there). A block with no costly cells around it in start or end stays
 * where it is, and start NULL leaves every block where it is. past and next have nblock
 * values each (either may be NULL). Pure. Errors: TSR_ERR_MEMORY. */
tsr_err tsr_rb_motion(const tsr_rebalance_costmap *end, const tsr_rebalance_costmap *start,
                      double ahead, double *past, double *next);

/* Blocks around a costly block, along each axis, whose centroid gives its motion: more than a
 * front moves in a window plus its thickness (3-7 cells and 3 cells on 4 CPU ranks). */
#define TSR_RB_MOTION_RADIUS 12

/* Enters a window's figures into the model (rank r: cells[r], extra[r], seconds per step t[r];
 * t <= 0: not measured) and refits beta (tsr_rebalance_model). Pure. */
void tsr_rb_model_update(tsr_rebalance_model *model, const double *cells, const double *extra,
                         const double *t);

/* Each rank's speed, work (cells + beta x extra) per second of compute per step, over the
 * windows the model holds, each weighted as in the fit: the windows since the rank's speed
 * last changed, the newest most. Why not the last window's alone: on two H200s a rank's
 * compute over a window of 50 steps varied by a few percent from window to window (its
 * kernels share the GPU with the overlapped exchange), enough to move the cut back and forth
 * three times after the first rebalance (bench/README.md, rebalance). 0 for a rank with no
 * window measured. Pure. */
void tsr_rb_model_speeds(const tsr_rebalance_model *model, double beta, double *speed);

#endif
