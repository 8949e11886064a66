/* The ghost-cell value of a physical boundary, host + device (one source, so both backends fill
 * ghosts bit for bit alike). Cell-centred: the face lies half a cell beyond the mirror cell. */
#ifndef TSR_BOUNDARY_CELL_H
#define TSR_BOUNDARY_CELL_H

#include "kernels/models/cell.h"

enum { TSR_GHOST_DIRICHLET = 0, TSR_GHOST_NEUMANN = 1 };

/* One face of a rank's box on the physical boundary: its ghost cells are the `layers` layers
 * beyond the box on `axis` (side 0: below lo, 1: above hi) over n1 x n2 cells on the
 * tangential axes t1, t2 from the box's lo + (o1, o2) (values per component, t1 fastest). */
typedef struct {
  int axis, side, type; /* type: TSR_GHOST_DIRICHLET or TSR_GHOST_NEUMANN */
  int t1, t2, n1, n2;   /* tangential axes and the face's cells along them */
  int o1, o2;           /* first tangential cell - the box's lo (<= 0: time.fuse's faces reach
                           into the ghosts that neighbours fill, whose cells it updates too) */
  int layers;           /* ghost layers filled: the stencil radius */
  double h;             /* cell size along axis */
} tsr_bc_face;

/* Which tangential cells of the faces a fill covers: all, those of the box, or those beyond it
 * (in ghosts a neighbour fills: time.fuse's faces, filled again once the exchange is done). */
enum { TSR_BC_WHOLE = 0, TSR_BC_OWNED = 1, TSR_BC_BEYOND = 2 };

/* Whether face point (a, b) (from the face's first cell) is one that part covers, on a box
 * len1 x len2 cells along the tangential axes. */
TSR_HD static inline int tsr_bc_covers(int part, int o1, int o2, int a, int b, int len1,
                                       int len2) {
  int in = a + o1 >= 0 && a + o1 < len1 && b + o2 >= 0 && b + o2 < len2;
  return part == TSR_BC_WHOLE || (part == TSR_BC_OWNED) == in;
}

/* Value of ghost layer l (1 = next to the face) whose mirror cell (l - 1 cells inside the
 * face) holds m, for face value g: Dirichlet makes the face value the mean of ghost and
 * mirror; Neumann (g = du/dn, outward) makes the centred difference across them equal g. */
TSR_HD static inline double tsr_ghost_value(int type, double g, double m, int l, double h) {
  return type == TSR_GHOST_DIRICHLET ? 2.0 * g - m : m + (double)(2 * l - 1) * h * g;
}

#endif
