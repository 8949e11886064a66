/* The ghost-cell value of a physical boundary, host + device (one source, so both backends fill
 * ghosts bit for bit alike). Cell-centred: the face lies half a cell beyond the mirror cell. */
#ifndef TSR_BOUNDARY_CELL_H
#define TSR_BOUNDARY_CELL_H

#include "kernels/models/cell.h"

enum { TSR_GHOST_DIRICHLET = 0, TSR_GHOST_NEUMANN = 1 };

/* One face of a rank's box on the physical boundary: its ghost cells are the layers beyond the
 * box on `axis` (side 0: below lo, 1: above hi) over the box's cells on the tangential axes
 * t1, t2 (n1 x n2 values per component, t1 fastest). */
typedef struct {
  int axis, side, type; /* type: TSR_GHOST_DIRICHLET or TSR_GHOST_NEUMANN */
  int t1, t2, n1, n2;
  double h;             /* cell size along axis */
} tsr_bc_face;

/* Value of ghost layer l (1 = next to the face) whose mirror cell (l - 1 cells inside the
 * face) holds m, for face value g: Dirichlet makes the face value the mean of ghost and
 * mirror; Neumann (g = du/dn, outward) makes the centred difference across them equal g. */
TSR_HD static inline double tsr_ghost_value(int type, double g, double m, int l, double h) {
  return type == TSR_GHOST_DIRICHLET ? 2.0 * g - m : m + (double)(2 * l - 1) * h * g;
}

#endif
