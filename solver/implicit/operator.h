/* The discrete operator of method implicit on the run driver's decomposition (private to
 * solver/implicit/ and its tests): the right-hand side F(t, U) and its Jacobian dF/dU as PETSc
 * objects over tessera's ownership.
 *
 * Numbering: rank r's box is one contiguous block of the global numbering, in rank order
 * (what VecCreateMPI gives), cells x fastest inside the box, components interlaced (row = cell
 * * ncomp + component; block size ncomp). F is computed by feeding the model's pointwise
 * definition (kernels/models/all.h, tsr_model_rhs: the explicit stages' own call) with the
 * stencil of a ghosted field whose physical ghosts come from solver/boundary.c and whose halo
 * comes from tessera's halo exchange (the run's plan, periodic images included). The Jacobian
 * is the chain rule of the same point's partials through that stencil: dlap to the 5/7-point
 * weights, dgrad to the centred differences, du to the cell itself; a neighbour across a
 * physical face is the ghost, whose value is -u (Dirichlet) or +u (Neumann) of the cell plus a
 * constant, so its weight goes to the diagonal with that sign; a neighbour on another rank or
 * across a periodic face is the column of the cell that fills the ghost, found once by
 * exchanging global indices through the same halo plan. */
#ifndef TSR_IMPLICIT_OPERATOR_H
#define TSR_IMPLICIT_OPERATOR_H

#include <petscmat.h>
#include <petscvec.h>

#include "solver/run_internal.h"

/* Which part of F: all of it (model + source), the stencil's terms (F(u, grad u, lap u) -
 * F(u, 0, 0): diffusion and transport, ARKIMEX's implicit part) or the rest (F(u, 0, 0) +
 * source: the reaction, ARKIMEX's explicit part). */
typedef enum { TSR_IMPLICIT_FULL = 0, TSR_IMPLICIT_STIFF, TSR_IMPLICIT_NONSTIFF } tsr_implicit_part;

typedef struct tsr_implicit_op tsr_implicit_op;

/* Turns a PETSc error code into a tsr_err (TSR_ERR_INTERNAL unless PETSc says memory) with
 * PETSc's message and the call's text. */
tsr_err tsr_petsc_err(PetscErrorCode e, const char *call, const char *file, int line);
#define TSR_PETSC(expr)                                                                        \
  do {                                                                                         \
    PetscErrorCode tsr_pe_ = (expr);                                                           \
    if (tsr_pe_) return tsr_petsc_err(tsr_pe_, #expr, __FILE__, __LINE__);                     \
  } while (0)

/* Creates the operator over x's box (after tsr_run_setup with the host backend and double
 * fields; x is borrowed and must outlive it): global numbering, and the column of each ghost
 * cell through one halo exchange. Uses x's slot T1 as its ghosted work field and T2 once.
 * Collective. Errors: TSR_ERR_MEMORY, TSR_ERR_MPI, PETSc's. Destroy with
 * tsr_implicit_op_destroy. */
tsr_err tsr_implicit_op_create(tsr_run_ctx *x, tsr_implicit_op **op);
void tsr_implicit_op_destroy(tsr_implicit_op **op);

/* A new vector of the operator's layout (the caller destroys it), and a new AIJ matrix
 * preallocated for the stencil (block size ncomp). Collective. */
tsr_err tsr_implicit_op_vec(tsr_implicit_op *op, Vec *v);
tsr_err tsr_implicit_op_mat(tsr_implicit_op *op, Mat *m);

/* The owned cells of host field f into v, and back. Not collective. */
tsr_err tsr_implicit_op_to_vec(tsr_implicit_op *op, const tsr_field *f, Vec v);
tsr_err tsr_implicit_op_from_vec(tsr_implicit_op *op, Vec v, tsr_field *f);

/* part of F(t, U) into F. Collective (the halo exchange). */
tsr_err tsr_implicit_op_rhs(tsr_implicit_op *op, tsr_implicit_part part, double t, Vec U, Vec F);

/* d(part of F)/dU at (t, U), assembled into J (from tsr_implicit_op_mat; zeroed first).
 * Collective. */
tsr_err tsr_implicit_op_jacobian(tsr_implicit_op *op, tsr_implicit_part part, double t, Vec U,
                                 Mat J);

/* Seconds spent in the boundary fill, the halo exchange, the source and the stencil loops of
 * tsr_implicit_op_rhs, and in the assembly of tsr_implicit_op_jacobian, so far (this rank). */
typedef struct {
  double boundary, halo, source, compute, assembly;
  long nrhs, njac;
} tsr_implicit_op_times;
tsr_implicit_op_times tsr_implicit_op_get_times(const tsr_implicit_op *op);

#endif
