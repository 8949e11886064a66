/* Physical boundary conditions on the faces of this rank's box that lie on the domain's
 * boundary (non-periodic axes): ghost layers from Dirichlet or Neumann values given by case
 * expressions of (x, y, z, t), evaluated at the face centres of the boundary cells.
 * Cell-centred: Dirichlet sets the ghost so that the face value is the mean of the ghost and
 * its mirror; Neumann (du/dn outward) so that the one-sided difference across the face is it. */
#ifndef TSR_BOUNDARY_H
#define TSR_BOUNDARY_H

#include "io/case.h"
#include "io/expr.h"
#include "kernels/field.h"
#include "kernels/models/boundary_cell.h"

typedef struct tsr_bc tsr_bc;

/* Prepares this rank's faces for fields over box: compiles the expressions and evaluates
 * time-independent values once. Each face fills `layers` ghost layers (the stencil radius)
 * over reach's tangential extent (reach: box grown into the ghosts neighbours fill, where
 * time.fuse updates cells too; NULL: box). Not collective. Destroy with tsr_bc_destroy.
 * Errors: TSR_ERR_INPUT (expression), TSR_ERR_MEMORY. */
tsr_err tsr_bc_create(const tsr_case *c, const tsr_box *box, const tsr_box *reach, int layers,
                      tsr_bc **bc);

/* Fills the boundary ghost layers of the host field f (all components) for time t, over the
 * faces' cells that part (TSR_BC_WHOLE, _OWNED, _BEYOND) covers. */
void tsr_bc_fill(tsr_bc *bc, tsr_field *f, double t, int part);

/* Looks for a boundary value that is not finite at t on this rank's faces (host evaluation,
 * the cached values untouched): TSR_ERR_INPUT naming the key (boundary.<face>.value.<comp>),
 * the point and t when one is (tsr_case_nonfinite), else TSR_OK. For the diagnosis of a state
 * that became non-finite. Not collective. Errors: TSR_ERR_INPUT, TSR_ERR_MEMORY. */
tsr_err tsr_bc_check_finite(const tsr_bc *bc, double t);

/* Number of this rank's faces on the physical boundary. */
int tsr_bc_nfaces(const tsr_bc *bc);

/* Face i (0 <= i < tsr_bc_nfaces). Borrowed. */
const tsr_bc_face *tsr_bc_face_info(const tsr_bc *bc, int i);

/* The values of face i at time t (host memory, ncomp x n2 x n1, borrowed until the next call),
 * evaluated only when they depend on t and t changed. *fresh is 1 when they were (re)evaluated
 * by this call, so a device copy needs refreshing. */
const double *tsr_bc_values(tsr_bc *bc, int i, double t, int *fresh);

/* The expression giving component q of face i (NULL: the value is 0), borrowed; and whether
 * any component of face i depends on t. For backends that evaluate them themselves. */
tsr_expr *tsr_bc_expr(const tsr_bc *bc, int i, int q);
int tsr_bc_face_timed(const tsr_bc *bc, int i);

/* Frees and sets *bc to NULL; accepts NULL. */
void tsr_bc_destroy(tsr_bc **bc);

/* Centre of cell i along axis d (0 on unused axes); on a periodic axis i is taken modulo the
 * cells first, so a ghost cell across the seam gets its owner's coordinate. One formula
 * everywhere, so every rank computes the same coordinates bit for bit. */
double tsr_cell_center(const tsr_case *c, int d, int i);

/* The cell centres of box b along each axis into coords (the box's three lengths summed), as
 * g's counts and coordinates; g's strides are the caller's. */
void tsr_box_centres(const tsr_case *c, const tsr_box *b, double *coords, tsr_expr_points *g);

#endif
