/* tsr_steps_host (kernels/steps.h): m steps of forward Euler, SSP-RK2, SSP-RK3 or RK4 in one
 * pass give, bit for bit, what their stages give one tsr_stage_host call at a time with the
 * physical ghosts filled before each, over shrinking regions (the driver's order: each step's
 * later stages read the step's input as base, RK4's an acc field of the field's precision):
 * random fields, 2D and 3D, every model with an explicit stage, fp64 and fp32, Euler
 * m = 1 .. 5, SSP-RK2 m = 1 and 3, SSP-RK3 m = 1 and 2, RK4 m = 1 and 2, with and without a
 * source, boxes with Dirichlet and Neumann faces (values that vary along
 * the face) on some sides and deep exchanged ghosts on the others, regions that are the box
 * and regions grown into the exchanged ghosts, default tiles and tiles small enough to cut
 * every axis several times with uneven remainders, and passes of a wider radius than the
 * stencil's (3D rings sized by it). Only the region's cells of out may change, and in not at
 * all. Passes of other schemes or too many stages are refused. */
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
  tsr_stage_kind scheme; /* its last stage's kind (tsr_steps_stages) */
  int radius;            /* the pass's (0: the stencil's, 1) */
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
  /* the ghosts only as deep as tsr_steps_fits asks: r layers where nothing is exchanged */
  const int model = c->model, ncomp = tsr_models[model].ncomp, m = c->m,
            S = tsr_steps_stages(c->scheme), L = m * S, r = c->radius ? c->radius : 1,
            ghost = all_faces(c) ? r : c->grow + L * r;
  double p[TSR_MAX_MODEL_PARAMS];
  for (int i = 0; i < tsr_models[model].nparam; ++i) p[i] = tsr_models[model].param[i].def;
  if (model == TSR_MODEL_ADVECTION_DIFFUSION) p[2] = 0.5, p[3] = -0.3;
  if (model == TSR_MODEL_IGNITION) p[4] = 20; /* few sub-steps: a quick test */
  const double h[3] = {0.1, 0.12, 0.09};
  tsr_field *in = make(c, ghost, ncomp, 0.0, 1.0);
  tsr_stage_desc s = {model, ncomp, c->scheme, 0.0, {0}};
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

  /* the reference: the L stages with the ghost fill before each; a step's stages after its
   * first read the last one's output as input, and those whose kind reads one (RK4's first
   * too) the step's input u as base; RK4's running sum lives in acc, a field of in's
   * precision, as in the driver */
  tsr_field *u = make(c, ghost, ncomp, 0.0, 1.0), *a = make(c, ghost, ncomp, 0.0, 1.0),
            *b = make(c, ghost, ncomp, 0.0, 1.0);
  tsr_field *acc = S == 4 ? make(c, ghost, ncomp, 0.0, 1.0) : NULL;
  memcpy(u->data, in->data, tsr_field_bytes(in));
  const tsr_box region = grow_free(c, c->box, c->grow);
  for (int l = 1; l <= L; ++l) {
    const int st = (l - 1) % S;
    tsr_field *from = st == 0 ? u : a;
    fill(&bc, &c->box, from);
    tsr_stage_desc sl = s;
    sl.kind = tsr_steps_kind(S, st);
    tsr_box rl = grow_free(c, region, (L - l) * r);
    tsr_stage_host(&sl, &rl, from, tsr_stage_uses_base(sl.kind) ? u : NULL, acc, src, b);
    tsr_field *x = a;
    a = b;
    b = x;
    if (st == S - 1) { /* the step's result is the next one's input */
      x = u;
      u = a;
      a = x;
    }
  }

  tsr_field *out = make(c, ghost, ncomp, 2.0, 3.0), *before = make(c, ghost, ncomp, 0.0, 1.0);
  tsr_field *in0 = make(c, ghost, ncomp, 0.0, 1.0);
  memcpy(before->data, out->data, tsr_field_bytes(out));
  memcpy(in0->data, in->data, tsr_field_bytes(in));
  tsr_steps_host_set_tile(c->tile);
  assert_int_equal(tsr_steps_host(&s, m, r, &region, bc.nface ? &bc : NULL, in, src, out), TSR_OK);
  tsr_steps_host_set_tile(NULL);

  int ok = same(out, u, &region);
  if (!ok)
    print_error("differs: dim %d model %s %s stages %d m %d radius %d src %d grow %d sides "
                "%d%d%d%d%d%d tile %d,%d,%d\n",
                c->dim, tsr_models[model].name, c->single ? "fp32" : "fp64", S, m, r, c->with_src,
                c->grow, c->side[0], c->side[1], c->side[2], c->side[3], c->side[4], c->side[5],
                c->tile[0], c->tile[1], c->tile[2]);
  assert_true(ok);
  assert_memory_equal(in->data, in0->data, tsr_field_bytes(in));
  /* only the region's cells of out were written */
  tsr_field_copy_box(before, u, &region);
  assert_memory_equal(out->data, before->data, tsr_field_bytes(out));

  for (int i = 0; i < bc.nface; ++i) free(vals[i]);
  tsr_field_destroy(&in);
  tsr_field_destroy(&in0);
  tsr_field_destroy(&src);
  tsr_field_destroy(&u);
  tsr_field_destroy(&a);
  tsr_field_destroy(&b);
  tsr_field_destroy(&acc);
  tsr_field_destroy(&out);
  tsr_field_destroy(&before);
}

static const int models[] = {TSR_MODEL_HEAT,       TSR_MODEL_ADVECTION_DIFFUSION,
                             TSR_MODEL_WAVE,       TSR_MODEL_GRAY_SCOTT,
                             TSR_MODEL_ALLEN_CAHN, TSR_MODEL_IGNITION};

/* The schemes and pass lengths: Euler's four times a model and precision, the SSP ones and
 * RK4 once (longer passes, whose levels run Euler's code but for the base and acc), with
 * default tiles and small ones by turns over the models and precisions. RK4 m = 2 is 8
 * levels, the most a pass takes, in 3D too (the driver asks 3D passes for 5 at most). */
static const struct {
  tsr_stage_kind scheme;
  int m, reps;
} passes[] = {{TSR_STAGE_EULER, 1, 4},  {TSR_STAGE_EULER, 2, 4},  {TSR_STAGE_EULER, 3, 4},
              {TSR_STAGE_EULER, 4, 4},  {TSR_STAGE_EULER, 5, 4},  {TSR_STAGE_SSP2_2, 1, 1},
              {TSR_STAGE_SSP2_2, 3, 1}, {TSR_STAGE_SSP3_3, 1, 1}, {TSR_STAGE_SSP3_3, 2, 1},
              {TSR_STAGE_RK4_4, 1, 1},  {TSR_STAGE_RK4_4, 2, 1}};

/* Every model, precision, scheme and m, each with random sides, source, growth and tiles. */
static void matches_stages(int dim) {
  int n = 0;
  for (int mi = 0; mi < 6; ++mi)
    for (int single = 0; single < 2; ++single)
      for (size_t pi = 0; pi < sizeof passes / sizeof passes[0]; ++pi)
        for (int rep = 0; rep < passes[pi].reps; ++rep, ++n) {
          tcase c = {.dim = dim, .model = models[mi], .single = single, .m = passes[pi].m,
                     .scheme = passes[pi].scheme};
          c.with_src = (n / 2 + mi) % 2;
          c.grow = (n + mi) % 3;
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
          if ((rep + mi + single) % 2) { /* several tiles along every axis, uneven lengths */
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
 * longest passes (Euler, SSP-RK2 and RK4 of 8 stages, SSP-RK3 of 6), and tiles thinner than
 * the halo; 3D columns of uneven sizes, and a box thinner along z than the passes' reach. */
static void tiles_and_remainders(void **st) {
  const int tiles[4][3] = {{0, 0, 0}, {7, 5, 0}, {1, 3, 0}, {64, 1, 0}};
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 5; ++i) { /* Euler m = 2, 5, 8; SSP-RK2 m = 4 or SSP-RK3 m = 2; RK4 m = 2 */
      tcase c = {.dim = 2, .model = TSR_MODEL_HEAT, .single = t % 2, .m = 3 * i + 2,
                 .with_src = 1, .box = {{0, 0, 0}, {45, 38, 1}}, .side = {1, 0, 0, 2}, .grow = 1};
      if (i == 3) c.scheme = t % 2 ? TSR_STAGE_SSP3_3 : TSR_STAGE_SSP2_2, c.m = t % 2 ? 2 : 4;
      if (i == 4) c.scheme = TSR_STAGE_RK4_4, c.m = 2;
      memcpy(c.tile, tiles[t], sizeof c.tile);
      run_case(&c);
    }
  for (int i = 0; i < 3; ++i) { /* Euler m = 4, SSP-RK3 m = 2, RK4 m = 2 */
    tcase c3 = {.dim = 3, .model = TSR_MODEL_WAVE, .m = i ? 2 : 4, .box = {{0, 0, 0}, {21, 17, 13}},
                .side = {2, 0, 0, 1, 1, 0}, .grow = 0, .tile = {5, 4, 3}};
    c3.scheme = i == 2 ? TSR_STAGE_RK4_4 : i ? TSR_STAGE_SSP3_3 : TSR_STAGE_EULER;
    c3.single = i == 2;
    run_case(&c3);
  }
  /* a 3D box two planes thick between two z faces, in columns one cell wide */
  for (int i = 0; i < 6; ++i) { /* Euler m = 2 and 5, SSP-RK3 m = 1 and 2, RK4 m = 1 and 2 */
    tcase c4 = {.dim = 3, .model = TSR_MODEL_GRAY_SCOTT, .single = i % 2, .with_src = 1,
                .box = {{-3, 1, 9}, {4, 6, 11}}, .side = {0, 1, 2, 0, 1, 2}, .grow = 1,
                .tile = {1, 2, 0}};
    c4.m = i < 2 ? 3 * i + 2 : 1 + i % 2;
    c4.scheme = i < 2 ? TSR_STAGE_EULER : i < 4 ? TSR_STAGE_SSP3_3 : TSR_STAGE_RK4_4;
    run_case(&c4);
  }
}

/* Passes of a wider radius than the stencil's: longer halos, and in 3D rings of more planes
 * (SSP-RK3's and RK4's base is read up to 4 r + 1 planes behind the level that holds it: more
 * than Euler's 3 r + 1 and the 8 of the default; RK4's acc ring uses the same size and is read
 * 3 r + 1 planes behind its writer), over a z range that wraps them twice or more, with a z
 * face on one side and exchanged ghosts on the other. */
static void wide_radius(void **st) {
  const struct {
    tsr_stage_kind scheme;
    int m, r;
  } passes3[] = {{TSR_STAGE_SSP3_3, 2, 2}, {TSR_STAGE_SSP3_3, 2, 3}, {TSR_STAGE_SSP2_2, 3, 3},
                 {TSR_STAGE_EULER, 3, 3},  {TSR_STAGE_RK4_4, 1, 2},  {TSR_STAGE_RK4_4, 2, 3},
                 {TSR_STAGE_RK4_4, 2, 2},  {TSR_STAGE_RK4_4, 1, 3}};
  for (int i = 0; i < 8; ++i) {
    const int r = passes3[i].r;
    tcase c = {.dim = 3, .model = TSR_MODEL_ALLEN_CAHN, .single = i % 2, .m = passes3[i].m,
               .scheme = passes3[i].scheme, .radius = r, .with_src = i / 2 % 2,
               .box = {{0, 0, -7}, {6, 5, 21}}, .side = {1, 0, 0, 2}, .grow = i % 3};
    c.side[4 + r % 2] = 1 + r % 2; /* z: Dirichlet below (r = 2) or Neumann above (r = 3) */
    if (i % 2) c.tile[0] = 4, c.tile[1] = 3;
    run_case(&c);
  }
  for (int i = 0; i < 3; ++i) { /* SSP-RK3 m = 2; RK4 m = 2 in fp64 and fp32 */
    tcase c2 = {.dim = 2, .model = TSR_MODEL_ADVECTION_DIFFUSION, .m = 2,
                .scheme = i ? TSR_STAGE_RK4_4 : TSR_STAGE_SSP3_3, .radius = 2, .with_src = 1,
                .box = {{0, 0, 0}, {17, 13, 1}}, .side = {2, 0, 1, 0}, .grow = 1,
                .tile = {5, 4, 0}};
    c2.single = i == 2;
    run_case(&c2);
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

/* Passes take forward Euler, SSP-RK2, SSP-RK3 and RK4 (by their last stage's kind) of 1 to
 * TSR_STEPS_MAX stages in all: a scheme's single stages (RK4's first three among them),
 * longer passes (RK4 m = 3: 12 stages) and passes whose stages, not steps, outnumber the
 * ghosts are refused, and nothing is written. */
static void schemes_refused(void **st) {
  tsr_box box = {{0, 0, 0}, {9, 7, 1}};
  tsr_field *in = NULL, *out = NULL;
  assert_int_equal(tsr_field_create(2, &box, 3, 1, &in), TSR_OK);
  assert_int_equal(tsr_field_create(2, &box, 3, 1, &out), TSR_OK);
  double kappa = 1.0, h[3] = {1, 1, 1};
  tsr_stage_desc s = {TSR_MODEL_HEAT, 1, TSR_STAGE_EULER, 0.1, {0}};
  tsr_stage_coef_init(&s.coef, TSR_MODEL_HEAT, &kappa, h, in);
  for (ptrdiff_t i = 0; i < in->scomp; ++i) ((double *)in->data)[i] = 1.0 + (double)i;
  const struct {
    tsr_stage_kind kind;
    int m;
  } bad[] = {{TSR_STAGE_RK4_1, 1},  {TSR_STAGE_RK4_2, 1},  {TSR_STAGE_RK4_3, 1},
             {TSR_STAGE_SSP3_2, 1}, {TSR_STAGE_SSP3_3, 3}, {TSR_STAGE_SSP2_2, 5},
             {TSR_STAGE_RK4_4, 3},  {TSR_STAGE_RK4_4, 0},  {TSR_STAGE_EULER, TSR_STEPS_MAX + 1},
             {TSR_STAGE_SSP2_2, 0}, {TSR_STAGE_SSP2_2, 2} /* 4 stages on 3 ghosts */,
             {TSR_STAGE_RK4_4, 1} /* 4 stages on 3 ghosts */};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    s.kind = bad[i].kind;
    assert_int_equal(tsr_steps_host(&s, bad[i].m, 1, &box, NULL, in, NULL, out), TSR_ERR_STATE);
  }
  /* RK4 m = 2 (8 stages) over one middle cell: 5 to 7 cells from it to the allocation's edges */
  tsr_box inner = {{4, 4, 0}, {5, 5, 1}};
  s.kind = TSR_STAGE_RK4_4;
  assert_int_equal(tsr_steps_host(&s, 2, 1, &inner, NULL, in, NULL, out), TSR_ERR_STATE);
  for (ptrdiff_t i = 0; i < out->scomp; ++i) assert_true(((double *)out->data)[i] == 0.0);
  s.kind = TSR_STAGE_SSP3_3; /* 3 stages on 3 ghosts */
  assert_int_equal(tsr_steps_host(&s, 1, 1, &box, NULL, in, NULL, out), TSR_OK);
  /* RK4's 4 stages over the box shrunk by a cell: 4 cells from it to the allocation's edges */
  tsr_box shrunk = {{1, 1, 0}, {8, 6, 1}};
  s.kind = TSR_STAGE_RK4_4;
  assert_int_equal(tsr_steps_host(&s, 1, 1, &shrunk, NULL, in, NULL, out), TSR_OK);
  tsr_field_destroy(&in);
  tsr_field_destroy(&out);
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
 * Euler 2D fp64 3, or 5 for two components; 2D fp32 3 for every model (5 lost for Gray-Scott);
 * 3D fp64 3; none for 3D fp32 (slower than single steps) or ignition. SSP-RK2, SSP-RK3 and
 * RK4 one step (in 3D fp32 too, since session 30), none for ignition; none
 * for schemes of other stage counts. A pure function: no GPU needed. */
static void gpu_pass_lengths(void **st) {
  assert_int_equal(tsr_steps_cuda_max(2, TSR_PREC_DOUBLE, TSR_MODEL_HEAT, 1), 3);
  assert_int_equal(tsr_steps_cuda_max(2, TSR_PREC_DOUBLE, TSR_MODEL_WAVE, 1), 5);
  assert_int_equal(tsr_steps_cuda_max(2, TSR_PREC_DOUBLE, TSR_MODEL_GRAY_SCOTT, 1), 5);
  assert_int_equal(tsr_steps_cuda_max(2, TSR_PREC_SINGLE, TSR_MODEL_HEAT, 1), 3);
  assert_int_equal(tsr_steps_cuda_max(2, TSR_PREC_SINGLE, TSR_MODEL_GRAY_SCOTT, 1), 3);
  assert_int_equal(tsr_steps_cuda_max(2, TSR_PREC_SINGLE, TSR_MODEL_IGNITION, 1), 0);
  assert_int_equal(tsr_steps_cuda_max(3, TSR_PREC_DOUBLE, TSR_MODEL_HEAT, 1), 3);
  assert_int_equal(tsr_steps_cuda_max(3, TSR_PREC_SINGLE, TSR_MODEL_HEAT, 1), 0);
  assert_int_equal(tsr_steps_cuda_max(1, TSR_PREC_DOUBLE, TSR_MODEL_HEAT, 1), 0);
  /* SSP-RK2, SSP-RK3, RK4: one step a pass, none for ignition, none for other schemes */
  assert_int_equal(tsr_steps_cuda_max(2, TSR_PREC_DOUBLE, TSR_MODEL_HEAT, 3), 1);
  assert_int_equal(tsr_steps_cuda_max(3, TSR_PREC_DOUBLE, TSR_MODEL_HEAT, 3), 1);
  assert_int_equal(tsr_steps_cuda_max(2, TSR_PREC_DOUBLE, TSR_MODEL_IGNITION, 3), 0);
  assert_int_equal(tsr_steps_cuda_max(2, TSR_PREC_DOUBLE, TSR_MODEL_HEAT, 4), 1);
  assert_int_equal(tsr_steps_cuda_max(3, TSR_PREC_DOUBLE, TSR_MODEL_WAVE, 4), 1);
  assert_int_equal(tsr_steps_cuda_max(3, TSR_PREC_SINGLE, TSR_MODEL_HEAT, 4), 1);
  assert_int_equal(tsr_steps_cuda_max(2, TSR_PREC_DOUBLE, TSR_MODEL_IGNITION, 4), 0);
  assert_int_equal(tsr_steps_cuda_max(2, TSR_PREC_DOUBLE, TSR_MODEL_HEAT, 5), 0);
  assert_int_equal(tsr_steps_cuda_max(2, TSR_PREC_DOUBLE, TSR_MODEL_HEAT, 2), 1);
  assert_int_equal(tsr_steps_cuda_max(3, TSR_PREC_SINGLE, TSR_MODEL_HEAT, 3), 1);
  assert_int_equal(tsr_steps_cuda_max(3, TSR_PREC_SINGLE, TSR_MODEL_HEAT, 2), 1);
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
      cmocka_unit_test(wide_radius),
      cmocka_unit_test(schemes_refused),
      cmocka_unit_test(empty_region),
      cmocka_unit_test(shallow_fields_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
