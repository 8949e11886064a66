/* Private to decomp/: the RCB of decomp/partition.c for the rebalancer (decomp/rebalance.c),
 * which cuts by predicted time instead of by cells. One recursion serves both, so the axis
 * order (x counted at half), the rank split and the feasibility rules are the same; without a
 * cutter the boxes are exactly those of tsr_partition. */
#ifndef TSR_PARTITION_IMPL_H
#define TSR_PARTITION_IMPL_H

#include "decomp/box.h"

/* Places one cut across axis of b: the cells on the low side, inside [lo, hi], for the low
 * side's share part / total of the ranks' summed weights. */
typedef struct {
  int (*cut)(void *ctx, const tsr_box *b, int axis, double part, double total, int lo, int hi);
  void *ctx;
} tsr_part_cutter;

/* Weighted RCB of global over nranks ranks into out[nranks] (box r for rank r); weights NULL:
 * equal; cutter NULL: cells split as the weights say (tsr_partition's rcb). Returns 1 on
 * success, 0 when the grid cannot give every rank min_width cells per axis. Pure. */
int tsr_partition_rcb(tsr_box global, int dim, int min_width, const double *weights,
                      int nranks, const tsr_part_cutter *cutter, tsr_box *out);

/* The plain cut: floor(len * part / total + 0.5) kept inside [lo, hi]. */
int tsr_partition_rounded_cut(int len, double part, double total, int lo, int hi);

#endif
