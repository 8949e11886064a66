#include "solver/boundary.h"

#include <math.h>
#include <stdlib.h>

#include "io/case_expr.h"
#include "io/expr.h"
#include "kernels/models/boundary_cell.h"

typedef struct {
  tsr_bc_face info;
  tsr_expr *expr[TSR_MAX_COMP];
  double *val;                /* ncomp * n1 * n2 values at the face centres */
  int timed;                  /* some expression depends on t */
  int valid;                  /* val holds values for time `at` (or for all t) */
  double at;
} face_bc;

struct tsr_bc {
  const tsr_case *c;
  tsr_box box;
  int ncomp, nface;
  double h[3];
  face_bc face[TSR_NFACE];
};

void tsr_box_centres(const tsr_case *c, const tsr_box *b, double *coords, tsr_expr_points *g) {
  for (int d = 0; d < 3; ++d) {
    g->n[d] = tsr_box_len(b, d);
    g->coord[d] = coords;
    for (int i = 0; i < g->n[d]; ++i) *coords++ = tsr_cell_center(c, d, b->lo[d] + i);
  }
}

double tsr_cell_center(const tsr_case *c, int d, int i) {
  if (d >= c->dim) return 0.0;
  if (c->periodic[d]) {
    i %= c->cells[d];
    if (i < 0) i += c->cells[d];
  }
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

tsr_err tsr_bc_create(const tsr_case *c, const tsr_box *box, const tsr_box *reach, int layers,
                      tsr_bc **out) {
  *out = NULL;
  tsr_bc *bc;
  TSR_ALLOC(bc, 1, "boundary conditions");
  bc->c = c;
  bc->box = *box;
  if (!reach) reach = box;
  bc->ncomp = c->ncomp;
  for (int d = 0; d < 3; ++d) bc->h[d] = (c->hi[d] - c->lo[d]) / c->cells[d];
  for (int f = 0; f < 2 * c->dim; ++f) {
    int d = f / 2, side = f % 2;
    if (c->periodic[d]) continue;
    if (side == 0 ? box->lo[d] != 0 : box->hi[d] != c->cells[d]) continue;
    face_bc *fb = &bc->face[bc->nface++];
    tsr_bc_face *fi = &fb->info;
    fi->axis = d;
    fi->side = side;
    fi->type = c->bc[f].type == TSR_BC_NEUMANN ? TSR_GHOST_NEUMANN : TSR_GHOST_DIRICHLET;
    fi->t1 = (d + 1) % 3;
    fi->t2 = (d + 2) % 3;
    fi->n1 = tsr_box_len(reach, fi->t1);
    fi->n2 = tsr_box_len(reach, fi->t2);
    fi->o1 = reach->lo[fi->t1] - box->lo[fi->t1];
    fi->o2 = reach->lo[fi->t2] - box->lo[fi->t2];
    fi->layers = layers;
    fi->h = bc->h[d];
    fb->val = malloc(sizeof(double) * (size_t)c->ncomp * fi->n1 * fi->n2);
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

const tsr_bc_face *tsr_bc_face_info(const tsr_bc *bc, int i) { return &bc->face[i].info; }
tsr_expr *tsr_bc_expr(const tsr_bc *bc, int i, int q) { return bc->face[i].expr[q]; }
int tsr_bc_face_timed(const tsr_bc *bc, int i) { return bc->face[i].timed; }

/* Component q of the face point by point: the fallback where a grid's scratch is not had. */
static void evaluate_points(tsr_bc *bc, face_bc *fb, int q, double t, double *xyz, double *v) {
  const tsr_bc_face *fi = &fb->info;
  for (int b = 0; b < fi->n2; ++b)
    for (int a = 0; a < fi->n1; ++a) {
      xyz[fi->t1] = tsr_cell_center(bc->c, fi->t1, bc->box.lo[fi->t1] + fi->o1 + a);
      xyz[fi->t2] = tsr_cell_center(bc->c, fi->t2, bc->box.lo[fi->t2] + fi->o2 + b);
      v[(size_t)b * fi->n1 + a] = tsr_expr_eval(fb->expr[q], xyz[0], xyz[1], xyz[2], t);
    }
}

/* The face's points: the face's coordinate into xyz[axis], the tangential cell centres into
 * tc (n1 + n2 values; NULL: only xyz), the grid of them into g. */
static void face_points(const tsr_bc *bc, const face_bc *fb, double *xyz, double *tc,
                        tsr_expr_points *g) {
  const tsr_case *c = bc->c;
  const tsr_bc_face *fi = &fb->info;
  int d = fi->axis;
  xyz[d] = d < c->dim ? (fi->side == 0 ? c->lo[d] : c->hi[d]) : 0.0;
  g->n[d] = 1, g->coord[d] = &xyz[d], g->stride[d] = 0;
  g->n[fi->t1] = fi->n1, g->coord[fi->t1] = tc, g->stride[fi->t1] = 1;
  g->n[fi->t2] = fi->n2, g->coord[fi->t2] = tc + fi->n1, g->stride[fi->t2] = fi->n1;
  for (int a = 0; tc && a < fi->n1; ++a)
    tc[a] = tsr_cell_center(c, fi->t1, bc->box.lo[fi->t1] + fi->o1 + a);
  for (int b = 0; tc && b < fi->n2; ++b)
    tc[fi->n1 + b] = tsr_cell_center(c, fi->t2, bc->box.lo[fi->t2] + fi->o2 + b);
}

/* The face's values over its cells at once (tsr_expr_eval_grid: the same bits as point by
 * point, each subexpression only as often as its coordinates change). */
static void evaluate(tsr_bc *bc, face_bc *fb, double t) {
  const tsr_case *c = bc->c;
  const tsr_bc_face *fi = &fb->info;
  double xyz[3];
  size_t n = (size_t)fi->n1 * fi->n2;
  double *tc = malloc(((size_t)fi->n1 + (size_t)fi->n2) * sizeof *tc);
  tsr_expr_points g;
  face_points(bc, fb, xyz, tc, &g);
  for (int q = 0; q < c->ncomp; ++q) {
    double *v = fb->val + q * n;
    if (!fb->expr[q])
      for (size_t i = 0; i < n; ++i) v[i] = 0.0;
    else if (!tc || tsr_expr_eval_grid(fb->expr[q], &g, t, v))
      evaluate_points(bc, fb, q, t, xyz, v);
  }
  free(tc);
  fb->valid = 1;
  fb->at = t;
}

tsr_err tsr_bc_check_finite(const tsr_bc *bc, double t) {
  const tsr_case *c = bc->c;
  for (int i = 0; i < bc->nface; ++i) {
    const face_bc *fb = &bc->face[i];
    const tsr_bc_face *fi = &fb->info;
    double xyz[3], at[3], v;
    double *tc;
    TSR_ALLOC(tc, (size_t)fi->n1 + (size_t)fi->n2, "a boundary face's coordinates");
    tsr_expr_points g;
    face_points(bc, fb, xyz, tc, &g);
    for (int q = 0; q < c->ncomp; ++q) {
      int found = 0;
      tsr_err err = fb->expr[q] ? tsr_expr_find_nonfinite(fb->expr[q], &g, t, &found, at, &v)
                                : TSR_OK;
      if (!err && !found) continue;
      free(tc);
      TSR_CALL(err);
      return tsr_case_nonfinite(c, &c->bc[2 * fi->axis + fi->side].value[q], v, at, 1, t);
    }
    free(tc);
  }
  return TSR_OK;
}

const double *tsr_bc_values(tsr_bc *bc, int i, double t, int *fresh) {
  face_bc *fb = &bc->face[i];
  *fresh = 0;
  if (!fb->valid || (fb->timed && fb->at != t)) {
    evaluate(bc, fb, t);
    *fresh = 1;
  }
  return fb->val;
}

void tsr_bc_fill(tsr_bc *bc, tsr_field *f, double t, int part) {
  for (int i = 0; i < bc->nface; ++i) {
    int fresh;
    const double *val = tsr_bc_values(bc, i, t, &fresh);
    const tsr_bc_face *fi = &bc->face[i].info;
    int d = fi->axis;
    size_t n = (size_t)fi->n1 * fi->n2;
    for (int q = 0; q < bc->ncomp; ++q) {
      const double *v = val + q * n;
      for (int b = 0; b < fi->n2; ++b)
        for (int a = 0; a < fi->n1; ++a) {
          if (!tsr_bc_covers(part, fi->o1, fi->o2, a, b, tsr_box_len(&bc->box, fi->t1),
                             tsr_box_len(&bc->box, fi->t2)))
            continue;
          int idx[3];
          idx[fi->t1] = bc->box.lo[fi->t1] + fi->o1 + a;
          idx[fi->t2] = bc->box.lo[fi->t2] + fi->o2 + b;
          double g = v[(size_t)b * fi->n1 + a];
          for (int l = 1; l <= fi->layers; ++l) {
            int gi[3] = {idx[0], idx[1], idx[2]}, mi[3] = {idx[0], idx[1], idx[2]};
            gi[d] = fi->side == 0 ? bc->box.lo[d] - l : bc->box.hi[d] - 1 + l;
            mi[d] = fi->side == 0 ? bc->box.lo[d] + l - 1 : bc->box.hi[d] - l;
            double m = tsr_field_get(f, tsr_field_at(f, q, mi[0], mi[1], mi[2]));
            tsr_field_set(f, tsr_field_at(f, q, gi[0], gi[1], gi[2]),
                          tsr_ghost_value(fi->type, g, m, l, fi->h));
          }
        }
    }
  }
}
