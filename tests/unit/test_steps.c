/* tsr_steps_host (kernels/steps.h): m forward Euler steps in one pass give, bit for bit, what m
 * calls of tsr_stage_host give with the physical ghosts filled before each, over shrinking
 * regions: random fields, 2D and 3D, every model with an explicit stage, fp64 and fp32,
 * m = 1 .. 5, with and without a source, boxes with Dirichlet and Neumann faces (values that
 * vary along the face) on some sides and deep exchanged ghosts on the others, regions that
 * are the box and regions grown into the exchanged ghosts, default tiles and tiles small
 * enough to cut every axis several times with uneven remainders. Only the region's cells of
 * out may change, and in not at all. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels/steps.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double urand(void) { /* xorshift64*, [0, 1) */
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return (double)((rng * 0x2545f4914f6cdd1dull) >> 11) * 0x1.0p-53;
}

typedef struct {
  int dim, model, single, m, with_src;
  tsr_box box;
  int side[6]; /* 0: exchanged, 1: Dirichlet, 2: Neumann (sides of axes < dim) */
  int grow;    /* the region: the box grown by this on its exchanged sides */
  int tile[3]; /* tsr_steps_host_set_tile's (0: default) */
} tcase;

/* b grown by g on the case's exchanged sides. */
static tsr_box grow_free(const tcase *c, tsr_box b, int g) {
  for (int d = 0; d < c->dim; ++d) {
    if (!c->side[2 * d]) b.lo[d] -= g;
    if (!c->side[2 * d + 1]) b.hi[d] += g;
  }
  return b;
}

/* tsr_bc_fill's fill (part WHOLE), written out plainly: the reference for the buffers'. */
static void fill(const tsr_steps_bc *bc, const tsr_box *box, tsr_field *f) {
  for (int i = 0; i < bc->nface; ++i) {
    const tsr_bc_face *fi = &bc->face[i];
    int d = fi->axis;
    size_t n = (size_t)fi->n1 * fi->n2;
    for (int q = 0; q < f->ncomp; ++q)
      for (int b = 0; b < fi->n2; ++b)
        for (int a = 0; a < fi->n1; ++a) {
          int idx[3];
          idx[fi->t1] = box->lo[fi->t1] + fi->o1 + a;
          idx[fi->t2] = box->lo[fi->t2] + fi->o2 + b;
          double g = bc->val[i][q * n + (size_t)b * fi->n1 + a];
          for (int l = 1; l <= fi->layers; ++l) {
            int gi[3] = {idx[0], idx[1], idx[2]}, mi[3] = {idx[0], idx[1], idx[2]};
            gi[d] = fi->side == 0 ? box->lo[d] - l : box->hi[d] - 1 + l;
            mi[d] = fi->side == 0 ? box->lo[d] + l - 1 : box->hi[d] - l;
            double m = tsr_field_get(f, tsr_field_at(f, q, mi[0], mi[1], mi[2]));
            tsr_field_set(f, tsr_field_at(f, q, gi[0], gi[1], gi[2]),
                          tsr_ghost_value(fi->type, g, m, l, fi->h));
          }
        }
  }
}

static tsr_field *make(const tcase *c, int ghost, int ncomp, double lo, double hi) {
  tsr_field *f = NULL;
  assert_int_equal(tsr_field_create_as(c->dim, &c->box, ghost, ncomp, TSR_MEM_HOST,
                                       c->single ? TSR_PREC_SINGLE : TSR_PREC_DOUBLE, &f),
                   TSR_OK);
  for (ptrdiff_t i = 0; i < (ptrdiff_t)ncomp * f->scomp; ++i)
    tsr_field_set(f, i, lo + (hi - lo) * urand());
  return f;
}

/* Whether the cells of region hold the same bytes in a and b. */
static int same(const tsr_field *a, const tsr_field *b, const tsr_box *r) {
  const size_t es = tsr_prec_size(a->prec), n = (size_t)tsr_box_len(r, 0) * es;
  for (int q = 0; q < a->ncomp; ++q)
    for (int k = r->lo[2]; k < r->hi[2]; ++k)
      for (int j = r->lo[1]; j < r->hi[1]; ++j) {
        ptrdiff_t o = tsr_field_at(a, q, r->lo[0], j, k);
        if (memcmp((const char *)a->data + o * es, (const char *)b->data + o * es, n)) return 0;
      }
  return 1;
}

/* Whether every side of the case is a physical face (nothing exchanged). */
static int all_faces(const tcase *c) {
  for (int f = 0; f < 2 * c->dim; ++f)
    if (!c->side[f]) return 0;
  return 1;
}

static void run_case(const tcase *c) {
  /* the ghosts only as deep as tsr_steps_fits asks: one layer where nothing is exchanged */
  const int model = c->model, ncomp = tsr_models[model].ncomp, m = c->m,
            ghost = all_faces(c) ? 1 : c->grow + m;
  double p[TSR_MAX_MODEL_PARAMS];
  for (int i = 0; i < tsr_models[model].nparam; ++i) p[i] = tsr_models[model].param[i].def;
  if (model == TSR_MODEL_ADVECTION_DIFFUSION) p[2] = 0.5, p[3] = -0.3;
  if (model == TSR_MODEL_IGNITION) p[4] = 20; /* few sub-steps: a quick test */
  const double h[3] = {0.1, 0.12, 0.09};
  tsr_field *in = make(c, ghost, ncomp, 0.0, 1.0);
  tsr_stage_desc s = {model, ncomp, TSR_STAGE_EULER, 0.0, {0}};
  tsr_stage_coef_init(&s.coef, model, p, h, in);
  double lim = tsr_model_dt_limit(model, p, h, c->dim);
  s.dt = 0.3 * (lim < 0.1 ? lim : 0.1);

  /* the faces, over the cells the steps update along them (solver/run.c's reach) */
  tsr_steps_bc bc = {0};
  tsr_box reach = grow_free(c, c->box, ghost - 1);
  double *vals[6] = {0};
  for (int f = 0; f < 2 * c->dim; ++f) {
    if (!c->side[f]) continue;
    tsr_bc_face *fi = &bc.face[bc.nface];
    fi->axis = f / 2;
    fi->side = f % 2;
    fi->type = c->side[f] == 1 ? TSR_GHOST_DIRICHLET : TSR_GHOST_NEUMANN;
    fi->t1 = (fi->axis + 1) % 3;
    fi->t2 = (fi->axis + 2) % 3;
    fi->n1 = tsr_box_len(&reach, fi->t1);
    fi->n2 = tsr_box_len(&reach, fi->t2);
    fi->o1 = reach.lo[fi->t1] - c->box.lo[fi->t1];
    fi->o2 = reach.lo[fi->t2] - c->box.lo[fi->t2];
    fi->layers = 1;
    fi->h = h[fi->axis];
    size_t n = (size_t)ncomp * fi->n1 * fi->n2;
    vals[bc.nface] = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; ++i) vals[bc.nface][i] = urand() - 0.5;
    bc.val[bc.nface] = vals[bc.nface];
    bc.nface++;
  }
  fill(&bc, &c->box, in);
  tsr_field *src = c->with_src ? make(c, ghost, ncomp, -0.5, 0.5) : NULL;

  /* the reference: m stages with the ghost fill before each */
  tsr_field *a = make(c, ghost, ncomp, 0.0, 1.0), *b = make(c, ghost, ncomp, 0.0, 1.0);
  memcpy(a->data, in->data, tsr_field_bytes(in));
  const tsr_box region = grow_free(c, c->box, c->grow);
  for (int l = 1; l <= m; ++l) {
    if (l > 1) fill(&bc, &c->box, a);
    tsr_box rl = grow_free(c, region, (m - l) * 1);
    tsr_stage_host(&s, &rl, a, NULL, NULL, src, b);
    tsr_field *x = a;
    a = b;
    b = x;
  }

  tsr_field *out = make(c, ghost, ncomp, 2.0, 3.0), *before = make(c, ghost, ncomp, 0.0, 1.0);
  tsr_field *in0 = make(c, ghost, ncomp, 0.0, 1.0);
  memcpy(before->data, out->data, tsr_field_bytes(out));
  memcpy(in0->data, in->data, tsr_field_bytes(in));
  tsr_steps_host_set_tile(c->tile);
  assert_int_equal(tsr_steps_host(&s, m, 1, &region, bc.nface ? &bc : NULL, in, src, out), TSR_OK);
  tsr_steps_host_set_tile(NULL);

  int ok = same(out, a, &region);
  if (!ok)
    print_error("differs: dim %d model %s %s m %d src %d grow %d sides %d%d%d%d%d%d tile %d,%d,%d\n",
                c->dim, tsr_models[model].name, c->single ? "fp32" : "fp64", m, c->with_src,
                c->grow, c->side[0], c->side[1], c->side[2], c->side[3], c->side[4], c->side[5],
                c->tile[0], c->tile[1], c->tile[2]);
  assert_true(ok);
  assert_memory_equal(in->data, in0->data, tsr_field_bytes(in));
  /* only the region's cells of out were written */
  tsr_field_copy_box(before, a, &region);
  assert_memory_equal(out->data, before->data, tsr_field_bytes(out));

  for (int i = 0; i < bc.nface; ++i) free(vals[i]);
  tsr_field_destroy(&in);
  tsr_field_destroy(&in0);
  tsr_field_destroy(&src);
  tsr_field_destroy(&a);
  tsr_field_destroy(&b);
  tsr_field_destroy(&out);
  tsr_field_destroy(&before);
}

static const int models[] = {TSR_MODEL_HEAT,       TSR_MODEL_ADVECTION_DIFFUSION,
                             TSR_MODEL_WAVE,       TSR_MODEL_GRAY_SCOTT,
                             TSR_MODEL_ALLEN_CAHN, TSR_MODEL_IGNITION};

/* Every model, precision and m, each with random sides, source, growth and tiles. */
static void matches_stages(int dim) {
  int n = 0;
  for (int mi = 0; mi < 6; ++mi)
    for (int single = 0; single < 2; ++single)
      for (int m = 1; m <= 5; ++m)
        for (int rep = 0; rep < 4; ++rep, ++n) {
          tcase c = {.dim = dim, .model = models[mi], .single = single, .m = m};
          c.with_src = (n / 2) % 2;
          c.grow = n % 3;
          /* z from -5 to 5: 3D columns keep z planes in rings of 8, and some copies of the
           * ghost planes (slots 0 and 1) happen only for some of these */
          int lo[3] = {3, -4, n % 11 - 5}, len[3] = {dim == 3 ? 9 : 13, dim == 3 ? 8 : 11, 7};
          for (int d = 0; d < 3; ++d) {
            c.box.lo[d] = d < dim ? lo[d] : 0;
            c.box.hi[d] = d < dim ? lo[d] + len[d] : 1;
          }
          /* all exchanged, all physical, and mixtures */
          for (int f = 0; f < 2 * dim; ++f)
            c.side[f] = n % 7 == 0 ? 0 : n % 7 == 1 ? 1 + f % 2 : (int)(3 * urand());
          if (rep % 2) { /* several tiles along every axis, with uneven lengths */
            c.tile[0] = 2 + n % 4;
            c.tile[1] = 3 + n % 3;
            c.tile[2] = dim == 3 ? 2 + n % 2 : 0;
          }
          run_case(&c);
        }
}
static void matches_stages_2d(void **st) { matches_stages(2); }
static void matches_stages_3d(void **st) { matches_stages(3); }

/* A larger 2D box with the default tiles and tiles of odd lengths that leave remainders, the
 * largest m, and tiles thinner than the halo; 3D columns of uneven sizes, and a box thinner
 * along z than the steps' reach. */
static void tiles_and_remainders(void **st) {
  const int tiles[4][3] = {{0, 0, 0}, {7, 5, 0}, {1, 3, 0}, {64, 1, 0}};
  for (int t = 0; t < 4; ++t)
    for (int m = 2; m <= TSR_STEPS_MAX; m += 3) {
      tcase c = {.dim = 2, .model = TSR_MODEL_HEAT, .single = t % 2, .m = m, .with_src = 1,
                 .box = {{0, 0, 0}, {45, 38, 1}}, .side = {1, 0, 0, 2}, .grow = 1};
      memcpy(c.tile, tiles[t], sizeof c.tile);
      run_case(&c);
    }
  tcase c3 = {.dim = 3, .model = TSR_MODEL_WAVE, .m = 4, .box = {{0, 0, 0}, {21, 17, 13}},
              .side = {2, 0, 0, 1, 1, 0}, .grow = 0, .tile = {5, 4, 3}};
  run_case(&c3);
  /* a 3D box two planes thick between two z faces, in columns one cell wide */
  for (int m = 2; m <= 5; m += 3) {
    tcase c4 = {.dim = 3, .model = TSR_MODEL_GRAY_SCOTT, .single = m == 5, .m = m,
                .with_src = 1, .box = {{-3, 1, 9}, {4, 6, 11}}, .side = {0, 1, 2, 0, 1, 2},
                .grow = 1, .tile = {1, 2, 0}};
    run_case(&c4);
  }
}

/* Fields too shallow for the pass, or of another shape than in, are refused (and nothing is
 * written); where every side is a face, one ghost layer takes passes of any length. */
static void shallow_fields_refused(void **st) {
  tsr_box box = {{0, 0, 0}, {9, 7, 1}}, grown = {{-2, 0, 0}, {9, 7, 1}};
  tsr_field *in = NULL, *out = NULL, *thin = NULL;
  assert_int_equal(tsr_field_create(2, &box, 3, 1, &in), TSR_OK);
  assert_int_equal(tsr_field_create(2, &box, 3, 1, &out), TSR_OK);
  assert_int_equal(tsr_field_create(2, &box, 2, 1, &thin), TSR_OK);
  double kappa = 1.0, h[3] = {1, 1, 1};
  tsr_stage_desc s = {TSR_MODEL_HEAT, 1, TSR_STAGE_EULER, 0.1, {0}};
  tsr_stage_coef_init(&s.coef, TSR_MODEL_HEAT, &kappa, h, in);
  for (ptrdiff_t i = 0; i < in->scomp; ++i) ((double *)in->data)[i] = 1.0 + (double)i;
  /* nothing exchanged is a face here only by the bc: without one, every side needs m ghosts */
  assert_true(tsr_steps_fits(3, 1, &box, NULL, in, NULL, out));
  assert_false(tsr_steps_fits(4, 1, &box, NULL, in, NULL, out));
  assert_false(tsr_steps_fits(3, 1, &grown, NULL, in, NULL, out));
  assert_false(tsr_steps_fits(2, 1, &box, NULL, in, thin, out));
  assert_false(tsr_steps_fits(2, 1, &box, NULL, in, NULL, thin));
  assert_int_equal(tsr_steps_host(&s, 4, 1, &box, NULL, in, NULL, out), TSR_ERR_STATE);
  assert_int_equal(tsr_steps_host(&s, 2, 1, &box, NULL, in, thin, out), TSR_ERR_STATE);
  for (ptrdiff_t i = 0; i < out->scomp; ++i) assert_true(((double *)out->data)[i] == 0.0);
  /* four faces: the boundary's one layer is all a pass reads beyond the box */
  tsr_steps_bc bc = {0};
  double vals[4][16] = {{0}};
  for (int f = 0; f < 4; ++f) {
    tsr_bc_face *fi = &bc.face[bc.nface];
    fi->axis = f / 2;
    fi->side = f % 2;
    fi->type = TSR_GHOST_DIRICHLET;
    fi->t1 = (fi->axis + 1) % 3;
    fi->t2 = (fi->axis + 2) % 3;
    fi->n1 = tsr_box_len(&box, fi->t1);
    fi->n2 = fi->t2 < 2 ? tsr_box_len(&box, fi->t2) : 1;
    fi->layers = 1;
    fi->h = 1.0;
    bc.val[bc.nface++] = vals[f];
  }
  assert_true(tsr_steps_fits(7, 1, &box, &bc, thin, NULL, thin));
  assert_false(tsr_steps_fits(7, 1, &grown, &bc, thin, NULL, thin));
  tsr_field_destroy(&in);
  tsr_field_destroy(&out);
  tsr_field_destroy(&thin);
}

/* An empty region writes nothing. */
static void empty_region(void **st) {
  tsr_box box = {{0, 0, 0}, {6, 5, 1}}, none = {{2, 2, 0}, {2, 5, 1}};
  tsr_field *in = NULL, *out = NULL;
  assert_int_equal(tsr_field_create(2, &box, 3, 1, &in), TSR_OK);
  assert_int_equal(tsr_field_create(2, &box, 3, 1, &out), TSR_OK);
  double kappa = 1.0, h[3] = {1, 1, 1};
  tsr_stage_desc s = {TSR_MODEL_HEAT, 1, TSR_STAGE_EULER, 0.1, {0}};
  tsr_stage_coef_init(&s.coef, TSR_MODEL_HEAT, &kappa, h, in);
  for (ptrdiff_t i = 0; i < in->scomp; ++i) ((double *)in->data)[i] = 1.0 + (double)i;
  tsr_steps_host(&s, 3, 1, &none, NULL, in, NULL, out);
  for (ptrdiff_t i = 0; i < out->scomp; ++i) assert_true(((double *)out->data)[i] == 0.0);
  tsr_field_destroy(&in);
  tsr_field_destroy(&out);
}

#ifdef TSR_HAVE_CUDA
/* The GPU pass lengths the driver is told, as measured (kernels/steps_cuda.cu, bench/README.md):
 * 2D fp64 3, or 5 for two components; 2D fp32 3 for every model (5 lost for Gray-Scott); 3D fp64
 * 3; none for 3D fp32 (slower than single steps) or ignition. A pure function: no GPU needed. */
static void gpu_pass_lengths(void **st) {
  assert_int_equal(tsr_steps_cuda_max(2, TSR_PREC_DOUBLE, TSR_MODEL_HEAT), 3);
  assert_int_equal(tsr_steps_cuda_max(2, TSR_PREC_DOUBLE, TSR_MODEL_WAVE), 5);
  assert_int_equal(tsr_steps_cuda_max(2, TSR_PREC_DOUBLE, TSR_MODEL_GRAY_SCOTT), 5);
  assert_int_equal(tsr_steps_cuda_max(2, TSR_PREC_SINGLE, TSR_MODEL_HEAT), 3);
  assert_int_equal(tsr_steps_cuda_max(2, TSR_PREC_SINGLE, TSR_MODEL_GRAY_SCOTT), 3);
  assert_int_equal(tsr_steps_cuda_max(2, TSR_PREC_SINGLE, TSR_MODEL_IGNITION), 0);
  assert_int_equal(tsr_steps_cuda_max(3, TSR_PREC_DOUBLE, TSR_MODEL_HEAT), 3);
  assert_int_equal(tsr_steps_cuda_max(3, TSR_PREC_SINGLE, TSR_MODEL_HEAT), 0);
  assert_int_equal(tsr_steps_cuda_max(1, TSR_PREC_DOUBLE, TSR_MODEL_HEAT), 0);
}
#endif

int main(void) {
  const struct CMUnitTest tests[] = {
#ifdef TSR_HAVE_CUDA
      cmocka_unit_test(gpu_pass_lengths),
#endif
      cmocka_unit_test(matches_stages_2d),
      cmocka_unit_test(matches_stages_3d),
      cmocka_unit_test(tiles_and_remainders),
      cmocka_unit_test(empty_region),
      cmocka_unit_test(shallow_fields_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
