/* Axis-aligned boxes of cells in global index space: the geometry every data movement is
 * computed from (halo exchange, migration, output hyperslabs, restart).
 *
 * A box holds cells lo[d] <= i < hi[d] on each axis. 2D boxes keep z as lo=0, hi=1 so that
 * every loop can run over three axes. All functions are pure and inline. */
#ifndef TSR_BOX_H
#define TSR_BOX_H

#include <stdint.h>

typedef struct {
  int lo[3];
  int hi[3];
} tsr_box;

static inline tsr_box tsr_box_make(int dim, const int cells[3]) {
  tsr_box b = {{0, 0, 0}, {1, 1, 1}};
  for (int d = 0; d < dim; ++d) b.hi[d] = cells[d];
  return b;
}

static inline int tsr_box_len(const tsr_box *b, int d) { return b->hi[d] - b->lo[d]; }

/* 1 when the box holds no cell. */
static inline int tsr_box_empty(const tsr_box *b) {
  return b->hi[0] <= b->lo[0] || b->hi[1] <= b->lo[1] || b->hi[2] <= b->lo[2];
}

static inline int64_t tsr_box_cells(const tsr_box *b) {
  if (tsr_box_empty(b)) return 0;
  return (int64_t)tsr_box_len(b, 0) * tsr_box_len(b, 1) * tsr_box_len(b, 2);
}

static inline tsr_box tsr_box_intersect(const tsr_box *a, const tsr_box *b) {
  tsr_box r;
  for (int d = 0; d < 3; ++d) {
    r.lo[d] = a->lo[d] > b->lo[d] ? a->lo[d] : b->lo[d];
    r.hi[d] = a->hi[d] < b->hi[d] ? a->hi[d] : b->hi[d];
  }
  return r;
}

/* Grows the box by g cells on both sides of the first dim axes (negative g shrinks). */
static inline tsr_box tsr_box_grow(const tsr_box *b, int dim, int g) {
  tsr_box r = *b;
  for (int d = 0; d < dim; ++d) { r.lo[d] -= g; r.hi[d] += g; }
  return r;
}

static inline tsr_box tsr_box_shift(const tsr_box *b, const int s[3]) {
  tsr_box r = *b;
  for (int d = 0; d < 3; ++d) { r.lo[d] += s[d]; r.hi[d] += s[d]; }
  return r;
}

static inline int tsr_box_equal(const tsr_box *a, const tsr_box *b) {
  for (int d = 0; d < 3; ++d)
    if (a->lo[d] != b->lo[d] || a->hi[d] != b->hi[d]) return 0;
  return 1;
}

/* 1 when every cell of inner lies in outer (an empty inner is contained). */
static inline int tsr_box_contains(const tsr_box *outer, const tsr_box *inner) {
  if (tsr_box_empty(inner)) return 1;
  for (int d = 0; d < 3; ++d)
    if (inner->lo[d] < outer->lo[d] || inner->hi[d] > outer->hi[d]) return 0;
  return 1;
}

#endif
