/* tsr_steps_host: m steps of forward Euler, SSP-RK2, SSP-RK3 or RK4 in one pass over memory
 * by overlapped tiles (how: kernels/steps_host_tiles.h). This file plans a pass and runs
 * forward Euler's and the SSP schemes' tiles; steps_host_rk4.c runs RK4's. */
#define TSR_STEPS_HOST_RK4 0
#include "kernels/steps_host_tiles.h"

/* The default tiles: 2D blocks of TILE_Y rows, as long along x as one of a thread's two buffers
 * holding BUF_BYTES allows (whole rows where they fit: the hardware prefetchers follow a row,
 * and a short one restarts them); 3D columns TILE_Y3 cells along y and as long along x as a
 * plane of SLOT_BYTES allows. bench/README.md (host_stencil's fusion) measured these. */
#define BUF_BYTES (4 << 20)
#define TILE_Y 64
#define SLOT_BYTES (256 << 10)
#define TILE_Y3 64
/* Planes in a 3D level's ring, at least ring_min's; more make each plane's copy into the
 * ring's tail rarer. */
#define RING 8

static int tile_set[3];

void tsr_steps_host_set_tile(const int tile[3]) {
  for (int d = 0; d < 3; ++d) tile_set[d] = tile && tile[d] > 0 ? tile[d] : 0;
}

/* The fewest planes of a level's ring that never stall column()'s wavefront. A reader d levels
 * on (the next level's stencil, d = 1, reads planes z - r .. z + r; a step's later stages that
 * read their base, at plane z: d = 2 .. S for the SSP schemes, 2 .. 3 for RK4, whose fourth
 * stage reads acc instead) moves past z only once this level has reached z + d r (each level
 * between r planes ahead of the one after it) and, at a top face, the r ghost planes beyond:
 * the ring holds planes z - r .. z + 2 r, and z .. z + (D + 1) r for the farthest base reader
 * D. RK4's acc ring, written by a step's first stage and read by its fourth at plane z (d = 3,
 * no ghost planes), holds z .. z + 3 r: 3 r + 1 planes, which the levels' ring size covers.
 * A simulation of the wavefront that tracks each slot's plane (r <= 4, every pass length, z
 * ranges of at least r planes with and without faces) agreed on both: a plane fewer in either
 * ring stalls it, and no ring size lets a read find the wrong plane. */
static int ring_min(int r, int S) {
  const int D = S == 4 ? 3 : S;
  return (D > 2 ? D + 1 : 3) * r + 1;
}

static void plan_init(plan *p, int L, int S, int r, const tsr_box *region,
                      const tsr_steps_bc *bc, const tsr_field *in) {
  p->dim = in->dim;
  p->L = L;
  p->S = S;
  p->r = r;
  p->region = *region;
  p->box = in->box;
  for (int f = 0; f < 6; ++f) p->face[f] = 0;
  for (int i = 0; bc && i < bc->nface; ++i) p->face[2 * bc->face[i].axis + bc->face[i].side] = 1;
  int len[3], t[3], halo = 2 * L * r;
  for (int d = 0; d < 3; ++d) len[d] = tsr_box_len(region, d);
  const size_t es = (size_t)in->ncomp * tsr_prec_size(in->prec);
  double across;
  if (p->dim == 3) {
    t[1] = tile_set[1] ? tile_set[1] : TILE_Y3;
    t[2] = len[2]; /* columns: the whole z range, streamed */
    across = (double)SLOT_BYTES / (double)es / (double)(t[1] + halo);
  } else {
    t[1] = tile_set[1] ? tile_set[1] : TILE_Y;
    t[2] = 1;
    across = (double)BUF_BYTES / (double)es / (double)(t[1] + halo);
  }
  t[0] = (int)across - halo;
  if (t[0] < 32) t[0] = 32;
  if (tile_set[0]) t[0] = tile_set[0];
  p->ntile = 1;
  size_t plane = 1;
  for (int d = 0; d < 3; ++d) {
    if (t[d] > len[d]) t[d] = len[d];
    p->nt[d] = (len[d] + t[d] - 1) / t[d];
    p->tile[d] = (len[d] + p->nt[d] - 1) / p->nt[d];
    p->ntile *= p->nt[d];
    if (d < 2) plane *= (size_t)(p->tile[d] + halo);
  }
  p->ring = RING > ring_min(r, S) ? RING : ring_min(r, S);
  p->slot = plane * (size_t)in->ncomp;
  /* 2D: two to four buffers of a tile and its halo; 3D: a ring per level before the last,
   * with 2 r slots more (the copies that keep the planes a stencil reads at one stride), and
   * for RK4 an acc ring a step (read at its own plane only: no copies) */
  p->nbuf = S == 4 ? 4 : S > 1 ? 3 : 2;
  p->bufcells = p->dim == 3 ? (size_t)(L - 1) * (size_t)(p->ring + 2 * r) * p->slot +
                                  (S == 4 ? (size_t)(L / S) * (size_t)p->ring * p->slot : 0)
                            : (size_t)p->nbuf * plane * (size_t)in->ncomp;
}


static int same_geometry(const tsr_field *a, const tsr_field *b) {
  return !b || (b->dim == a->dim && b->ncomp == a->ncomp && tsr_box_equal(&b->gbox, &a->gbox) &&
                b->sy == a->sy && b->sz == a->sz && b->scomp == a->scomp && b->prec == a->prec);
}

int tsr_steps_fits(int levels, int radius, const tsr_box *region, const tsr_steps_bc *bc,
                   const tsr_field *in, const tsr_field *src, const tsr_field *out) {
  if (!same_geometry(in, src) || !same_geometry(in, out)) return 0;
  for (int a = 0; a < in->dim; ++a)
    for (int side = 0; side < 2; ++side) {
      int g = levels * radius;
      for (int i = 0; bc && i < bc->nface; ++i)
        if (bc->face[i].axis == a && bc->face[i].side == side) g = radius;
      if (side ? region->hi[a] + g > in->gbox.hi[a] : region->lo[a] - g < in->gbox.lo[a])
        return 0;
    }
  return 1;
}

tsr_err tsr_steps_host(const tsr_stage_desc *s, int m, int radius, const tsr_box *region,
                       const tsr_steps_bc *bc, const tsr_field *in, const tsr_field *src,
                       tsr_field *out) {
  const int S = tsr_steps_stages(s->kind);
  TSR_CHECK(S > 0, TSR_ERR_STATE,
            "tsr_steps_host: stage kind %d ends no scheme a pass takes; passes take forward "
            "Euler, SSP-RK2, SSP-RK3 and RK4, named by their last stage's kind (%d, %d, %d, %d)",
            (int)s->kind, TSR_STAGE_EULER, TSR_STAGE_SSP2_2, TSR_STAGE_SSP3_3, TSR_STAGE_RK4_4);
  TSR_CHECK(m >= 1 && m <= TSR_STEPS_MAX / S, TSR_ERR_STATE,
            "tsr_steps_host: %d steps of %d stages; a pass takes 1 to %d stages in all (at most "
            "%d steps of this scheme)", m, S, TSR_STEPS_MAX, TSR_STEPS_MAX / S);
  TSR_CHECK(in != out, TSR_ERR_STATE, "tsr_steps_host: in and out are one field; a pass reads "
            "in while it writes out, so give it two");
  const int L = m * S;
  if (tsr_box_empty(region)) return TSR_OK;
  TSR_CHECK(tsr_steps_fits(L, radius, region, bc, in, src, out), TSR_ERR_STATE,
            "tsr_steps_host: fields of %d ghosts too shallow for %d stages over the region, or "
            "of different shapes", in->ghost, L);
  if (L == 1) { /* nothing to fuse: the plain stage, without the buffers' copy */
    tsr_stage_host(s, region, in, NULL, NULL, src, out);
    return TSR_OK;
  }
  if (bc && bc->nface == 0) bc = NULL;
  plan p;
  plan_init(&p, L, S, radius, region, bc, in);
  /* a cache line's padding between the threads' buffers */
  size_t per_thread = (p.bufcells * tsr_prec_size(in->prec) + 127) & ~(size_t)63;
  int nthreads = omp_get_max_threads();
  if ((ptrdiff_t)nthreads > p.ntile) nthreads = (int)p.ntile;
  char *bufs = malloc(per_thread * (size_t)nthreads);
  TSR_CHECK(bufs, TSR_ERR_MEMORY, "out of memory for %zu bytes of time-tile buffers",
            per_thread * (size_t)nthreads);
  if (S == 4) tsr_steps_host_rk4(s, &p, bc, in, src, out, bufs, per_thread, nthreads);
  else pass(s, &p, bc, in, src, out, bufs, per_thread, nthreads);
  free(bufs);
  return TSR_OK;
}
