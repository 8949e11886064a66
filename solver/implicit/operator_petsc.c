/* The discrete operator of method implicit (solver/implicit/operator.h). */
#include "solver/implicit/operator.h"

#include <math.h>
#include <string.h>

#include "kernels/models/all.h"
#include "solver/watchdog.h"

struct tsr_implicit_op {
  tsr_run_ctx *x;         /* borrowed */
  int model, ncomp, dim;
  PetscInt nlocal;        /* rows of this rank: cells * ncomp */
  PetscInt cell0;         /* global index of this rank's first cell */
  PetscInt *gid;          /* per cell of the ghosted box: the global cell that fills it (owned
                             cells: their own), or -1 beyond a physical face */
  int bc_type[3][2];      /* per axis and side of this box on the physical boundary:
                             TSR_GHOST_DIRICHLET or TSR_GHOST_NEUMANN */
  tsr_implicit_op_times times;
};

tsr_err tsr_petsc_err(PetscErrorCode e, const char *call, const char *file, int line) {
  const char *text = NULL;
  char *specific = NULL;
  PetscErrorMessage(e, &text, &specific);
  return tsr_err_set(e == PETSC_ERR_MEM ? TSR_ERR_MEMORY : TSR_ERR_INTERNAL, file, line,
                     "PETSc: %s%s%s (in %s)", text ? text : "error",
                     specific && *specific ? ": " : "", specific ? specific : "", call);
}

static ptrdiff_t gbox_at(const tsr_field *f, int i, int j, int k) { return tsr_field_at(f, 0, i, j, k); }

tsr_err tsr_implicit_op_create(tsr_run_ctx *x, tsr_implicit_op **pop) {
  *pop = NULL;
  const tsr_case *c = x->c;
  tsr_field *w = x->slot[TSR_SLOT_T2];
  TSR_CHECK(x->be->mem == TSR_MEM_HOST && w->prec == TSR_PREC_DOUBLE, TSR_ERR_STATE,
            "method implicit needs double host fields");
  tsr_implicit_op *op;
  TSR_ALLOC(op, 1, "the implicit operator");
  op->x = x;
  op->model = c->model;
  op->ncomp = c->ncomp;
  op->dim = c->dim;
  op->nlocal = (PetscInt)tsr_box_cells(&x->box) * c->ncomp;
  /* the first cell of this rank: the cells of the boxes of the ranks below it */
  int64_t before = 0;
  for (int b = 0; b < x->layout.nbox; ++b)
    if (x->layout.owner[b] < x->rank) before += tsr_box_cells(&x->layout.boxes[b]);
  op->cell0 = (PetscInt)before;
  for (int d = 0; d < 3; ++d) op->bc_type[d][0] = op->bc_type[d][1] = TSR_GHOST_DIRICHLET;
  for (int i = 0; i < tsr_bc_nfaces(x->bc); ++i) {
    const tsr_bc_face *f = tsr_bc_face_info(x->bc, i);
    op->bc_type[f->axis][f->side] = f->type;
  }
  /* the global index of every cell of the ghosted box, through the run's halo exchange: ghosts
   * that no box (or periodic image) covers keep -1 */
  size_t ng = (size_t)w->scomp;
  op->gid = malloc(ng * sizeof *op->gid);
  if (!op->gid) {
    free(op);
    return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory for the ghost map");
  }
  double *wd = w->data;
  for (size_t i = 0; i < (size_t)w->ncomp * ng; ++i) wd[i] = -1.0;
  const tsr_box *b = &x->box;
  PetscInt l = op->cell0;
  for (int k = b->lo[2]; k < b->hi[2]; ++k)
    for (int j = b->lo[1]; j < b->hi[1]; ++j)
      for (int i = b->lo[0]; i < b->hi[0]; ++i) wd[gbox_at(w, i, j, k)] = (double)l++;
  tsr_err err = x->be->halo_begin(x, w);
  if (!err) err = x->be->halo_end(x, w);
  for (size_t i = 0; i < ng; ++i) op->gid[i] = (PetscInt)wd[i];
  memset(wd, 0, tsr_field_bytes(w));
  if (err) {
    tsr_implicit_op_destroy(&op);
    return err;
  }
  *pop = op;
  return TSR_OK;
}

void tsr_implicit_op_destroy(tsr_implicit_op **op) {
  if (!op || !*op) return;
  free((*op)->gid);
  free(*op);
  *op = NULL;
}

tsr_implicit_op_times tsr_implicit_op_get_times(const tsr_implicit_op *op) { return op->times; }

tsr_err tsr_implicit_op_vec(tsr_implicit_op *op, Vec *v) {
  TSR_PETSC(VecCreate(op->x->comm, v));
  TSR_PETSC(VecSetSizes(*v, op->nlocal, PETSC_DETERMINE));
  TSR_PETSC(VecSetBlockSize(*v, op->ncomp));
  TSR_PETSC(VecSetType(*v, VECMPI));
  return TSR_OK;
}

tsr_err tsr_implicit_op_mat(tsr_implicit_op *op, Mat *m) {
  /* per row: the cell and its 2 dim neighbours, every component (an upper bound: the models'
   * neighbours couple a component with itself only, but the pattern must hold any model) */
  PetscInt nz = (PetscInt)(2 * op->dim + 1) * op->ncomp;
  TSR_PETSC(MatCreate(op->x->comm, m));
  TSR_PETSC(MatSetSizes(*m, op->nlocal, op->nlocal, PETSC_DETERMINE, PETSC_DETERMINE));
  TSR_PETSC(MatSetType(*m, MATAIJ));
  TSR_PETSC(MatSetBlockSize(*m, op->ncomp));
  TSR_PETSC(MatSeqAIJSetPreallocation(*m, nz, NULL));
  TSR_PETSC(MatMPIAIJSetPreallocation(*m, nz, NULL, nz, NULL));
  return TSR_OK;
}

tsr_err tsr_implicit_op_to_vec(tsr_implicit_op *op, const tsr_field *f, Vec v) {
  PetscScalar *a;
  TSR_PETSC(VecGetArray(v, &a));
  const tsr_box *b = &op->x->box;
  const int nc = op->ncomp, nx = tsr_box_len(b, 0), ny = tsr_box_len(b, 1), nz = tsr_box_len(b, 2);
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < ny; ++j) {
      PetscScalar *row = a + ((size_t)k * ny + j) * nx * nc;
      for (int q = 0; q < nc; ++q) {
        ptrdiff_t o = tsr_field_at(f, q, b->lo[0], b->lo[1] + j, b->lo[2] + k);
        for (int i = 0; i < nx; ++i) row[i * nc + q] = tsr_field_get(f, o + i);
      }
    }
  TSR_PETSC(VecRestoreArray(v, &a));
  return TSR_OK;
}

tsr_err tsr_implicit_op_from_vec(tsr_implicit_op *op, Vec v, tsr_field *f) {
  const PetscScalar *a;
  TSR_PETSC(VecGetArrayRead(v, &a));
  const tsr_box *b = &op->x->box;
  const int nc = op->ncomp, nx = tsr_box_len(b, 0), ny = tsr_box_len(b, 1), nz = tsr_box_len(b, 2);
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < ny; ++j) {
      const PetscScalar *row = a + ((size_t)k * ny + j) * nx * nc;
      for (int q = 0; q < nc; ++q) {
        ptrdiff_t o = tsr_field_at(f, q, b->lo[0], b->lo[1] + j, b->lo[2] + k);
        for (int i = 0; i < nx; ++i) tsr_field_set(f, o + i, row[i * nc + q]);
      }
    }
  TSR_PETSC(VecRestoreArrayRead(v, &a));
  return TSR_OK;
}

/* U into the work field with valid ghosts at t: owned cells, the physical faces (the explicit
 * method's boundary fill), then the halo (tessera's exchange over the run's plan). */
static tsr_err fill_ghosted(tsr_implicit_op *op, double t, Vec U) {
  tsr_run_ctx *x = op->x;
  tsr_field *w = x->slot[TSR_SLOT_T1];
  TSR_CALL(tsr_implicit_op_from_vec(op, U, w));
  double t0 = MPI_Wtime();
  TSR_CALL(x->be->boundary(x, w, t, TSR_BC_WHOLE));
  double t1 = MPI_Wtime();
  TSR_CALL(x->be->halo_begin(x, w));
  tsr_watchdog_waiting(TSR_WATCHDOG_PEERS);
  tsr_err err = x->be->halo_end(x, w);
  tsr_watchdog_waiting(0);
  TSR_CALL(err);
  double t2 = MPI_Wtime();
  op->times.boundary += t1 - t0;
  op->times.halo += t2 - t1;
  return TSR_OK;
}

/* The point's F split as asked: full: the explicit stages' tsr_model_rhs; stiff: F - F with
 * the stencil terms zeroed; nonstiff: F with them zeroed. Inlined with a constant model. */
static inline __attribute__((always_inline)) void
point_rhs(int m, int nc, int part, const double *u, const tsr_cell_coef *k, double *r) {
  if (part == TSR_IMPLICIT_FULL) {
    tsr_model_rhs(m, u, k, r);
    return;
  }
  tsr_point pt;
  tsr_model_point_fill(m, u, k, &pt);
  double f0[TSR_MAX_COMP];
  if (part == TSR_IMPLICIT_STIFF) tsr_model_point(m, &pt, k, r, NULL);
  for (int q = 0; q < nc; ++q) {
    pt.lap[q] = 0.0;
    pt.g[q][0] = pt.g[q][1] = pt.g[q][2] = 0.0;
  }
  tsr_model_point(m, &pt, k, f0, NULL);
  for (int q = 0; q < nc; ++q) r[q] = part == TSR_IMPLICIT_STIFF ? r[q] - f0[q] : f0[q];
}

static inline __attribute__((always_inline)) void
rhs_loop(int m, int nc, int part, const tsr_field *w, const tsr_field *src, const tsr_box *b,
         const tsr_cell_coef *kc, PetscScalar *F) {
  const int nx = tsr_box_len(b, 0), ny = tsr_box_len(b, 1), nz = tsr_box_len(b, 2);
  const double *wd = w->data;
  const int add_src = src && part != TSR_IMPLICIT_STIFF;
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < ny; ++j) {
      PetscScalar *row = F + ((size_t)k * ny + j) * nx * nc;
      ptrdiff_t o = tsr_field_at(w, 0, b->lo[0], b->lo[1] + j, b->lo[2] + k);
      for (int i = 0; i < nx; ++i) {
        double r[TSR_MAX_COMP] = {0};
        point_rhs(m, nc, part, wd + o + i, kc, r);
        for (int q = 0; q < nc; ++q)
          row[i * nc + q] = add_src ? r[q] + tsr_field_get(src, o + i + q * w->scomp) : r[q];
      }
    }
}

tsr_err tsr_implicit_op_rhs(tsr_implicit_op *op, tsr_implicit_part part, double t, Vec U, Vec F) {
  tsr_run_ctx *x = op->x;
  TSR_CALL(fill_ghosted(op, t, U));
  double t0 = MPI_Wtime();
  TSR_CALL(tsr_run_source_eval(x, t));
  double t1 = MPI_Wtime();
  PetscScalar *f;
  TSR_PETSC(VecGetArray(F, &f));
  const tsr_field *w = x->slot[TSR_SLOT_T1];
  tsr_cell_coef k = x->desc.coef;
  k.dt = x->dt;
  const int p = (int)part;
  switch (op->model) { /* a constant model per loop, as the explicit stages have it */
  case TSR_MODEL_HEAT: rhs_loop(TSR_MODEL_HEAT, 1, p, w, x->src, &x->box, &k, f); break;
  case TSR_MODEL_ADVECTION_DIFFUSION:
    rhs_loop(TSR_MODEL_ADVECTION_DIFFUSION, 1, p, w, x->src, &x->box, &k, f);
    break;
  case TSR_MODEL_ALLEN_CAHN: rhs_loop(TSR_MODEL_ALLEN_CAHN, 1, p, w, x->src, &x->box, &k, f); break;
  case TSR_MODEL_GRAY_SCOTT: rhs_loop(TSR_MODEL_GRAY_SCOTT, 2, p, w, x->src, &x->box, &k, f); break;
  default:
    VecRestoreArray(F, &f);
    return tsr_err_set(TSR_ERR_STATE, __FILE__, __LINE__, "model %s has no implicit form",
                       tsr_models[op->model].name);
  }
  TSR_PETSC(VecRestoreArray(F, &f));
  double t2 = MPI_Wtime();
  op->times.source += t1 - t0;
  op->times.compute += t2 - t1;
  op->times.nrhs++;
  return TSR_OK;
}

tsr_err tsr_implicit_op_jacobian(tsr_implicit_op *op, tsr_implicit_part part, double t, Vec U,
                                 Mat J) {
  tsr_run_ctx *x = op->x;
  TSR_CALL(fill_ghosted(op, t, U));
  double t0 = MPI_Wtime();
  TSR_PETSC(MatZeroEntries(J));
  const tsr_field *w = x->slot[TSR_SLOT_T1];
  const tsr_box *b = &x->box;
  tsr_cell_coef k = x->desc.coef;
  k.dt = x->dt;
  const int nc = op->ncomp, dim = op->dim, m = op->model;
  const double *wd = w->data;
  const ptrdiff_t stride[3] = {1, w->sy, w->sz};
  double diag_lap = 0.0;
  for (int d = 0; d < dim; ++d) diag_lap += -2.0 * k.ih2[d];
  PetscInt local = op->cell0;
  /* rows one cell (ncomp rows) at a time: MatSetValues is not thread-safe */
  for (int kk = b->lo[2]; kk < b->hi[2]; ++kk)
    for (int jj = b->lo[1]; jj < b->hi[1]; ++jj)
      for (int ii = b->lo[0]; ii < b->hi[0]; ++ii, ++local) {
        const ptrdiff_t o = gbox_at(w, ii, jj, kk);
        tsr_point pt, p0;
        tsr_point_jac Jp, J0;
        double F[TSR_MAX_COMP];
        tsr_model_point_fill(m, wd + o, &k, &pt);
        tsr_model_point(m, &pt, &k, F, &Jp);
        p0 = pt;
        for (int q = 0; q < nc; ++q) {
          p0.lap[q] = 0.0;
          p0.g[q][0] = p0.g[q][1] = p0.g[q][2] = 0.0;
        }
        tsr_model_point(m, &p0, &k, F, &J0);
        for (int c = 0; c < nc; ++c) {
          PetscInt row = local * nc + c;
          PetscInt cols[(2 * 3 + 1) * TSR_MAX_COMP];
          PetscScalar vals[(2 * 3 + 1) * TSR_MAX_COMP];
          int n = 0;
          /* the cell itself: du (the stiff part keeps what the stencil terms add to it) */
          double centre[TSR_MAX_COMP];
          for (int e = 0; e < nc; ++e) {
            double du = part == TSR_IMPLICIT_FULL        ? Jp.du[c][e]
                        : part == TSR_IMPLICIT_STIFF     ? Jp.du[c][e] - J0.du[c][e]
                                                         : J0.du[c][e];
            centre[e] = du + (part == TSR_IMPLICIT_NONSTIFF ? 0.0 : Jp.dlap[c][e] * diag_lap);
          }
          if (part != TSR_IMPLICIT_NONSTIFF)
            for (int d = 0; d < dim; ++d)
              for (int s = -1; s <= 1; s += 2) {
                int q[3] = {ii, jj, kk};
                q[d] += s;
                const ptrdiff_t oq = o + s * stride[d];
                const int inside = q[d] >= b->lo[d] && q[d] < b->hi[d];
                const PetscInt g = inside ? -2 : op->gid[oq];
                for (int e = 0; e < nc; ++e) {
                  double wgt = Jp.dlap[c][e] * k.ih2[d] + Jp.dg[c][e][d] * (double)s * k.ih2x[d];
                  if (wgt == 0.0 && e != c) continue;
                  if (g == -1) { /* beyond a physical face: the ghost mirrors this cell */
                    centre[e] += op->bc_type[d][s > 0] == TSR_GHOST_DIRICHLET ? -wgt : wgt;
                    continue;
                  }
                  PetscInt col;
                  if (inside) {
                    PetscInt lq = ((PetscInt)(q[2] - b->lo[2]) * tsr_box_len(b, 1) +
                                   (q[1] - b->lo[1])) * tsr_box_len(b, 0) + (q[0] - b->lo[0]);
                    col = (op->cell0 + lq) * nc + e;
                  } else {
                    col = g * nc + e;
                  }
                  cols[n] = col;
                  vals[n++] = wgt;
                }
              }
          for (int e = 0; e < nc; ++e) {
            cols[n] = local * nc + e;
            vals[n++] = centre[e];
          }
          TSR_PETSC(MatSetValues(J, 1, &row, n, cols, vals, ADD_VALUES));
        }
      }
  TSR_PETSC(MatAssemblyBegin(J, MAT_FINAL_ASSEMBLY));
  TSR_PETSC(MatAssemblyEnd(J, MAT_FINAL_ASSEMBLY));
  op->times.assembly += MPI_Wtime() - t0;
  op->times.njac++;
  return TSR_OK;
}
