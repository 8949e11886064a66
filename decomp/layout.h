/* Layout: the boxes that cover the global grid (geometry) and which rank owns each (ownership),
 * kept apart as AMReX keeps BoxArray and DistributionMapping apart. A rebalance changes the
 * boxes and the owners, never the physics. Every rank holds the whole layout. */
#ifndef TSR_LAYOUT_H
#define TSR_LAYOUT_H

#include "decomp/box.h"
#include "io/error.h"

typedef enum { TSR_PART_RCB = 0, TSR_PART_SLABS, TSR_PART_GRID } tsr_part_kind;

typedef struct {
  int dim;            /* 2 or 3 */
  tsr_box global;     /* the whole grid: lo = 0, hi = cells */
  int periodic[3];    /* 1 where the axis wraps around */
  int nbox;           /* number of boxes (one per rank) */
  tsr_box *boxes;     /* geometry: disjoint, their union is global; owned by the layout */
  int *owner;         /* ownership: owner[b] is the rank that owns boxes[b]; owned by the layout */
} tsr_layout;

typedef struct {
  tsr_part_kind kind;    /* partitioner */
  int min_width;         /* each box spans at least this many cells on every active axis */
  int grid[3];           /* TSR_PART_GRID: ranks along each axis (product = nranks; 1 for z in 2D) */
  const double *weights; /* RCB and SLABS: one weight per rank (relative speed); NULL = equal */
} tsr_part_opts;

/* Splits the global grid into nranks boxes, box r owned by rank r, writing *layout (the caller
 * frees it with tsr_layout_free). Deterministic: every rank computes the same layout.
 * Errors: TSR_ERR_INPUT when the grid cannot give every rank min_width cells on each axis
 * (the message names the largest rank count that would work), or bad options. */
tsr_err tsr_partition(int dim, const int cells[3], const int periodic[3], int nranks,
                      const tsr_part_opts *opts, tsr_layout *layout);

/* The largest rank count <= upto that tsr_partition can serve with these options (0: none).
 * For TSR_PART_GRID the grid is ignored and the answer is for the best px*py*pz grid. */
int tsr_partition_max_ranks(int dim, const int cells[3], const tsr_part_opts *opts, int upto);

/* The index of the box owned by rank, or -1. */
int tsr_layout_box_of(const tsr_layout *layout, int rank);

/* Deep copy. The caller frees dst with tsr_layout_free. Errors: TSR_ERR_MEMORY. */
tsr_err tsr_layout_copy(const tsr_layout *src, tsr_layout *dst);

/* Releases the arrays; safe on a zeroed or already freed layout. */
void tsr_layout_free(tsr_layout *layout);

#endif
