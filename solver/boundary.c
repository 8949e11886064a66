#include "solver/boundary.h"

#include <math.h>
#include <mpi.h>
#include <stdlib.h>

#include "io/case_expr.h"
#include "io/expr.h"

typedef struct {
  int face, axis, side;
  tsr_bc_type type;
  int t1, t2;                 /* the two tangential axes */
  int n1, n2;                 /* their lengths on this box (1 for unused axes) */
  tsr_expr *expr[TSR_MAX_COMP];
  double *val;                /* ncomp * n1 * n2 values at the face centres */
  int timed;                  /* some expression depends on t */
  int valid;                  /* val holds values for time `at` (or for all t) */
  double at;
} face_bc;

struct tsr_bc {
  const tsr_case *c;
  tsr_box box;
  int ghost, ncomp, nface;
  double h[3];
  face_bc face[TSR_NFACE];
};

double tsr_cell_center(const tsr_case *c, int d, int i) {
  if (d >= c->dim) return 0.0;
  double h = (c->hi[d] - c->lo[d]) / c->cells[d];
  return c->lo[d] + ((double)i + 0.5) * h;
}

void tsr_bc_destroy(tsr_bc **pbc) {
  if (!pbc || !*pbc) return;
  tsr_bc *bc = *pbc;
  for (int f = 0; f < bc->nface; ++f) {
    for (int q = 0; q < TSR_MAX_COMP; ++q) tsr_expr_destroy(&bc->face[f].expr[q]);
    free(bc->face[f].val);
  }
  free(bc);
  *pbc = NULL;
}

tsr_err tsr_bc_create(const tsr_case *c, const tsr_box *box, int ghost, tsr_bc **out) {
  *out = NULL;
  tsr_bc *bc;
  TSR_ALLOC(bc, 1, "boundary conditions");
  bc->c = c;
  bc->box = *box;
  bc->ghost = ghost;
  bc->ncomp = c->ncomp;
  for (int d = 0; d < 3; ++d) bc->h[d] = (c->hi[d] - c->lo[d]) / c->cells[d];
  for (int f = 0; f < 2 * c->dim; ++f) {
    int d = f / 2, side = f % 2;
    if (c->periodic[d]) continue;
    if (side == 0 ? box->lo[d] != 0 : box->hi[d] != c->cells[d]) continue;
    face_bc *fb = &bc->face[bc->nface++];
    fb->face = f;
    fb->axis = d;
    fb->side = side;
    fb->type = c->bc[f].type;
    fb->t1 = (d + 1) % 3;
    fb->t2 = (d + 2) % 3;
    fb->n1 = tsr_box_len(box, fb->t1);
    fb->n2 = tsr_box_len(box, fb->t2);
    fb->val = malloc(sizeof(double) * (size_t)c->ncomp * fb->n1 * fb->n2);
    if (!fb->val) {
      tsr_bc_destroy(&bc);
      return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory for boundary values");
    }
    for (int q = 0; q < c->ncomp; ++q) {
      const tsr_case_expr *e = &c->bc[f].value[q];
      if (!e->text) continue; /* validated cases always have one; stays 0 otherwise */
      tsr_err err = tsr_case_compile(c, e, &fb->expr[q]);
      if (err) {
        tsr_bc_destroy(&bc);
        return err;
      }
      if (tsr_expr_depends_on_time(fb->expr[q])) fb->timed = 1;
    }
  }
  *out = bc;
  return TSR_OK;
}

int tsr_bc_nfaces(const tsr_bc *bc) { return bc->nface; }

static void evaluate(tsr_bc *bc, face_bc *fb, double t) {
  const tsr_case *c = bc->c;
  int d = fb->axis;
  double xyz[3];
  xyz[d] = d < c->dim ? (fb->side == 0 ? c->lo[d] : c->hi[d]) : 0.0;
  size_t n = (size_t)fb->n1 * fb->n2;
  for (int q = 0; q < c->ncomp; ++q) {
    double *v = fb->val + q * n;
    for (int b = 0; b < fb->n2; ++b)
      for (int a = 0; a < fb->n1; ++a) {
        xyz[fb->t1] = tsr_cell_center(c, fb->t1, bc->box.lo[fb->t1] + a);
        xyz[fb->t2] = tsr_cell_center(c, fb->t2, bc->box.lo[fb->t2] + b);
        v[(size_t)b * fb->n1 + a] =
            fb->expr[q] ? tsr_expr_eval(fb->expr[q], xyz[0], xyz[1], xyz[2], t) : 0.0;
      }
  }
  fb->valid = 1;
  fb->at = t;
}

static double wall(void) { return MPI_Wtime(); }

double tsr_bc_fill(tsr_bc *bc, tsr_field *f, double t) {
  double spent = 0.0;
  for (int i = 0; i < bc->nface; ++i) {
    face_bc *fb = &bc->face[i];
    if (!fb->valid || (fb->timed && fb->at != t)) {
      double t0 = wall();
      evaluate(bc, fb, t);
      spent += wall() - t0;
    }
    int d = fb->axis;
    size_t n = (size_t)fb->n1 * fb->n2;
    double h = bc->h[d];
    for (int q = 0; q < bc->ncomp; ++q) {
      const double *v = fb->val + q * n;
      for (int b = 0; b < fb->n2; ++b)
        for (int a = 0; a < fb->n1; ++a) {
          int idx[3];
          idx[fb->t1] = bc->box.lo[fb->t1] + a;
          idx[fb->t2] = bc->box.lo[fb->t2] + b;
          double g = v[(size_t)b * fb->n1 + a];
          for (int l = 1; l <= bc->ghost; ++l) {
            int gi[3] = {idx[0], idx[1], idx[2]}, mi[3] = {idx[0], idx[1], idx[2]};
            gi[d] = fb->side == 0 ? bc->box.lo[d] - l : bc->box.hi[d] - 1 + l;
            mi[d] = fb->side == 0 ? bc->box.lo[d] + l - 1 : bc->box.hi[d] - l;
            double m = f->data[tsr_field_at(f, q, mi[0], mi[1], mi[2])];
            double gv = fb->type == TSR_BC_DIRICHLET ? 2.0 * g - m
                                                     : m + (double)(2 * l - 1) * h * g;
            f->data[tsr_field_at(f, q, gi[0], gi[1], gi[2])] = gv;
          }
        }
    }
  }
  return spent;
}
