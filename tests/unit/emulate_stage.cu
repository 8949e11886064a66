/* CPU emulation of tsr_stage_cuda's launches (CTest stage_emulated, CUDA builds, no GPU
 * needed). It includes kernels/stage_cuda.cuh, runs the kernel's own per-thread body
 * (thread_cells, stage_column, pick_shape: __host__ __device__) for every thread of the grid
 * the launcher would use, and compares with tsr_stage_host bit for bit, plus poison checks
 * outside the region, for every model x kind x dim x source x region x nine launch shapes
 * (register kernels, shared-memory tiles with register rings or asynchronous plane copies) x
 * both precisions. It checks indexing, chunking, the thin-x mapping and the register stencil
 * on CI; the device's own arithmetic (-fmad=false) is checked by tests/gpu/test_stage.c on a
 * GPU machine. Prints "cases N fails 0" and exits 0 when every case matches. */
#include "kernels/stage_cuda.cuh"
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

/* fn(b) for every block b of a launch's grid, and thread l of a block as the kernel numbers it */
template <typename F>
void each_block(const shape &sh, F fn) {
  for (unsigned bz = 0; bz < sh.grid.z; ++bz)
    for (unsigned by = 0; by < sh.grid.y; ++by)
      for (unsigned bx = 0; bx < sh.grid.x; ++bx) fn(uint3{bx, by, bz});
}
static uint3 thread_of(const shape &sh, unsigned l) { return uint3{l % sh.block.x, l / sh.block.x, 0}; }
template <int M, int NC, int KIND, int DIM, bool SRC, typename T>
void emu(const stage_args<T> &a, const shape &sh) {
  each_block(sh, [&](uint3 b) {
    for (unsigned l = 0; l < sh.block.x * sh.block.y; ++l) {
      int i, j, m0;
      if (!thread_cells<DIM>(a, thread_of(sh, l), b, sh.block, &i, &j, &m0)) continue;
      if (DIM == 3 && a.thin)
        stage_column<M, NC, KIND, DIM, SRC, T>(a, i, 0, j, (int)sh.block.x, m0);
      else
        stage_column<M, NC, KIND, DIM, SRC, T>(a, i, (int)sh.block.x, j, 0, m0);
    }
  });
}
/* A tile_kernel launch: each block's threads run tile_put, then (the barrier) tile_update, step
 * by step; the plane buffer a step writes is poisoned first, so a cell reading a place that no
 * thread wrote in that step gets NaN and fails the comparison. */
template <int M, int NC, int KIND, bool SRC, typename T>
void emu_tile(const stage_args<T> &a, const shape &sh) {
  const unsigned nt = sh.block.x * sh.block.y;
  std::vector<tile_thread<NC>> th(nt);
  std::unique_ptr<tile_smem<NC, T>> sm(new tile_smem<NC, T>);
  each_block(sh, [&](uint3 b) {
    int m0 = 0, m1 = 0;
    for (unsigned l = 0; l < nt; ++l) tile_init<NC>(a, thread_of(sh, l), b, th[l], &m0, &m1);
    for (int m = m0; m < m1; ++m) {
      memset(sm->v[m & 1], 0xff, sizeof sm->v[m & 1]);
      for (unsigned l = 0; l < nt; ++l) tile_put<NC>(a, th[l], *sm, m, m1);
      for (unsigned l = 0; l < nt; ++l) tile_update<M, NC, KIND, SRC>(a, th[l], *sm, m);
    }
  });
}
/* An atile_kernel launch: the four planes of the prologue, then per step (after the barrier)
 * every thread's copies of plane m + 3, then every thread's cells of plane m. Copies are plain
 * copies here; the buffer a step's copies fill is poisoned first, so a cell reading a place no
 * copy filled gets NaN. */
template <int M, int KIND, bool SRC, typename T>
void emu_atile(const stage_args<T> &a, const shape &sh) {
  const unsigned nt = sh.block.x * sh.block.y;
  std::vector<atile_thread> th(nt);
  std::unique_ptr<atile_smem<T>> sm(new atile_smem<T>);
  each_block(sh, [&](uint3 b) {
    int m0 = 0, m1 = 0;
    for (unsigned l = 0; l < nt; ++l) atile_init(a, thread_of(sh, l), b, th[l], &m0, &m1);
    memset(sm->v, 0xff, sizeof sm->v);
    for (int p = -1; p <= 2; ++p)
      for (unsigned l = 0; l < nt; ++l) atile_issue(a, th[l], *sm, m0 + p, m0, m1);
    for (int m = m0; m < m1; ++m) {
      memset(sm->v[(m + 4 - m0) % kAPlanes], 0xff, sizeof sm->v[0]);
      for (unsigned l = 0; l < nt; ++l) atile_issue(a, th[l], *sm, m + 3, m0, m1);
      for (unsigned l = 0; l < nt; ++l) atile_update<M, KIND, SRC>(a, th[l], *sm, m, m0);
    }
  });
}
template <int M, int NC, int KIND, typename T>
void ek(int dim, bool src, const shape &sh, const stage_args<T> &a) {
  if (NC == 1 && dim == 3 && sh.tile == 2) {
    if (src) emu_atile<M, KIND, true>(a, sh); else emu_atile<M, KIND, false>(a, sh);
  } else if (dim == 3 && sh.tile) { if (src) emu_tile<M, NC, KIND, true>(a, sh); else emu_tile<M, NC, KIND, false>(a, sh); }
  else if (dim == 3) { if (src) emu<M, NC, KIND, 3, true>(a, sh); else emu<M, NC, KIND, 3, false>(a, sh); }
  else { if (src) emu<M, NC, KIND, 2, true>(a, sh); else emu<M, NC, KIND, 2, false>(a, sh); }
}
template <int M, int NC, typename T>
void em(int kind, int dim, bool src, const shape &sh, const stage_args<T> &a) {
  switch (kind) {
  case 0: ek<M, NC, 0>(dim, src, sh, a); break; case 1: ek<M, NC, 1>(dim, src, sh, a); break;
  case 2: ek<M, NC, 2>(dim, src, sh, a); break; case 3: ek<M, NC, 3>(dim, src, sh, a); break;
  case 4: ek<M, NC, 4>(dim, src, sh, a); break; case 5: ek<M, NC, 5>(dim, src, sh, a); break;
  case 6: ek<M, NC, 6>(dim, src, sh, a); break; case 7: ek<M, NC, 7>(dim, src, sh, a); break;
  }
}
static long thin_launches = 0; /* launches with lanes along y: the thin-x path ran */
static long tile_launches = 0, atile_launches = 0; /* launches through shared-memory tiles */
template <typename T>
static tsr_err emu_typed(const tsr_stage_desc *s, const tsr_box *rg, tsr_field *in, tsr_field *base,
                         tsr_field *acc, tsr_field *src, tsr_field *out) {
  tsr_field *all[] = {in, base, acc, src, out};
  for (auto f : all) if (f) f->mem = TSR_MEM_DEVICE;
  stage_args<T> a; shape sh; bool empty;
  tsr_err e = prepare<T>(s, rg, in, base, acc, src, out, &a, &sh, &empty);
  for (auto f : all) if (f) f->mem = TSR_MEM_HOST;
  if (e || empty) return e;
  thin_launches += sh.thin;
  tile_launches += sh.tile != 0;
  atile_launches += sh.tile == 2 && s->ncomp == 1;
  int dim = s->coef.dim; bool hs = src;
  switch (s->model) {
  case 0: em<0, 1>(s->kind, dim, hs, sh, a); break;
  case 1: em<1, 1>(s->kind, dim, hs, sh, a); break;
  case 2: em<2, 2>(s->kind, dim, hs, sh, a); break;
  case 3: em<3, 2>(s->kind, dim, hs, sh, a); break;
  case 4: em<4, 1>(s->kind, dim, hs, sh, a); break;
  case TSR_MODEL_IGNITION: em<TSR_MODEL_IGNITION, 1>(s->kind, dim, hs, sh, a); break;
  }
  return TSR_OK;
}
static tsr_err emu_stage(const tsr_stage_desc *s, const tsr_box *rg, tsr_field *in, tsr_field *base,
                         tsr_field *acc, tsr_field *src, tsr_field *out) {
  if (in->prec == TSR_PREC_SINGLE) return emu_typed<float>(s, rg, in, base, acc, src, out);
  return emu_typed<double>(s, rg, in, base, acc, src, out);
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double uniform() { g_rng ^= g_rng >> 12; g_rng ^= g_rng << 25; g_rng ^= g_rng >> 27;
  return (double)((g_rng * 0x2545f4914f6cdd1dull) >> 11) * (1.0 / 9007199254740992.0); }
static int fails = 0;
static int inside(const tsr_box *r, int i, int j, int k) {
  return i >= r->lo[0] && i < r->hi[0] && j >= r->lo[1] && j < r->hi[1] && k >= r->lo[2] && k < r->hi[2]; }

static void fill(tsr_field *f, size_t n) {
  for (size_t q = 0; q < n; ++q) tsr_field_set(f, (ptrdiff_t)q, 0.5 + uniform());
}

/* Batches (tsr_stage_cuda_batch): the batched grid's blocks through batch_thread, three fields
 * of their own values, each against the host stage of its field; heat and wave (one and two
 * components), SSP3 and RK4 stages, with a source, whole box and an off-centre region. */
template <int M, int NC, int KIND, int DIM>
static int emu_batch(const tsr_stage_desc *s, const tsr_box *rg, tsr_field **in, tsr_field **base,
                     tsr_field **acc, tsr_field **src, tsr_field **out) {
  const int nb = 3;
  batch_ptrs<double> p;
  memset(&p, 0, sizeof p);
  stage_args<double> a;
  shape sh;
  bool empty;
  for (int k = 0; k < nb; ++k) {
    tsr_field *all[] = {in[k], base[k], acc[k], src[k], out[k]};
    for (auto f : all) f->mem = TSR_MEM_DEVICE;
    stage_args<double> af;
    tsr_err e = prepare<double>(s, rg, in[k], base[k], acc[k], src[k], out[k], &af, &sh, &empty, false);
    for (auto f : all) f->mem = TSR_MEM_HOST;
    if (e || empty || sh.tile) return 1;
    if (k == 0) a = af;
    p.in[k] = af.in, p.base[k] = af.base, p.acc[k] = af.acc, p.src[k] = af.src, p.out[k] = af.out;
  }
  p.zblocks = (int)sh.grid.z;
  for (unsigned bz = 0; bz < sh.grid.z * nb; ++bz)
    for (unsigned by = 0; by < sh.grid.y; ++by)
      for (unsigned bx = 0; bx < sh.grid.x; ++bx)
        for (unsigned l = 0; l < sh.block.x * sh.block.y; ++l)
          batch_thread<M, NC, KIND, DIM, true, double>(a, p, thread_of(sh, l), uint3{bx, by, bz}, sh.block);
  return 0;
}

static void fill(tsr_field *f, size_t n);

static long batch_cases(int *fails) {
  long cases = 0;
  tsr_stage_cuda_set_tuning(NULL);
  for (int model = 0; model <= 2; model += 2)
  for (int dim = 2; dim <= 3; ++dim)
  for (int kind = TSR_STAGE_SSP3_3; kind <= TSR_STAGE_RK4_2; kind += TSR_STAGE_RK4_2 - TSR_STAGE_SSP3_3)
  for (int r = 0; r < 2; ++r) {
    const int nc = tsr_models[model].ncomp;
    tsr_box box = dim == 2 ? tsr_box{{4, -3, 0}, {4 + 37, -3 + 23, 1}} : tsr_box{{4, -3, 7}, {4 + 19, -3 + 13, 7 + 11}};
    tsr_box rg = box;
    if (r) { rg.lo[0] += 2; rg.hi[1] -= 3; if (dim == 3) rg.lo[2] += 1; }
    tsr_field *in[3], *base[3], *acc[3], *src[3], *out[3], *acch[3], *outh[3];
    tsr_field **sets[] = {in, base, acc, src, out, acch, outh};
    for (auto set : sets) for (int k = 0; k < 3; ++k) tsr_field_create_as(dim, &box, 1, nc, TSR_MEM_HOST, TSR_PREC_DOUBLE, &set[k]);
    const size_t n = (size_t)nc * in[0]->scomp, bytes = n * sizeof(double);
    double p[8]; for (int q = 0; q < tsr_models[model].nparam; ++q) p[q] = 0.3 + 0.17 * q;
    double hx[3] = {0.11, 0.13, 0.17};
    tsr_stage_desc d = {model, nc, (tsr_stage_kind)kind, 0.0123, {}};
    tsr_stage_coef_init(&d.coef, model, p, hx, in[0]);
    for (int k = 0; k < 3; ++k) {
      fill(in[k], n); fill(base[k], n); fill(acc[k], n); fill(src[k], n);
      memset(out[k]->data, 0xff, bytes); memset(outh[k]->data, 0xff, bytes);
      memcpy(acch[k]->data, acc[k]->data, bytes);
      tsr_stage_host(&d, &rg, in[k], base[k], tsr_stage_uses_acc(kind) ? acch[k] : NULL, src[k], outh[k]);
    }
    int e;
    if (model == 0 && dim == 2) e = kind == TSR_STAGE_SSP3_3 ? emu_batch<0, 1, TSR_STAGE_SSP3_3, 2>(&d, &rg, in, base, acc, src, out)
                                                             : emu_batch<0, 1, TSR_STAGE_RK4_2, 2>(&d, &rg, in, base, acc, src, out);
    else if (model == 0) e = kind == TSR_STAGE_SSP3_3 ? emu_batch<0, 1, TSR_STAGE_SSP3_3, 3>(&d, &rg, in, base, acc, src, out)
                                                      : emu_batch<0, 1, TSR_STAGE_RK4_2, 3>(&d, &rg, in, base, acc, src, out);
    else if (dim == 2) e = kind == TSR_STAGE_SSP3_3 ? emu_batch<2, 2, TSR_STAGE_SSP3_3, 2>(&d, &rg, in, base, acc, src, out)
                                                    : emu_batch<2, 2, TSR_STAGE_RK4_2, 2>(&d, &rg, in, base, acc, src, out);
    else e = kind == TSR_STAGE_SSP3_3 ? emu_batch<2, 2, TSR_STAGE_SSP3_3, 3>(&d, &rg, in, base, acc, src, out)
                                      : emu_batch<2, 2, TSR_STAGE_RK4_2, 3>(&d, &rg, in, base, acc, src, out);
    for (int k = 0; k < 3; ++k)
      if (e || memcmp(out[k]->data, outh[k]->data, bytes) ||
          (tsr_stage_uses_acc(kind) && memcmp(acc[k]->data, acch[k]->data, bytes))) {
        if ((*fails)++ < 10) printf("FAIL batch model %d dim %d kind %d region %d field %d\n", model, dim, kind, r, k);
      }
    ++cases;
    for (auto set : sets) for (int k = 0; k < 3; ++k) tsr_field_destroy(&set[k]);
  }
  return cases;
}

int main() {
  const int lo[3] = {4, -3, 7};
  /* the defaults (no tiles at these sizes but for 3D with tiles: register-ring tiles), register
   * shapes, register-ring tiles marching 16, 3 and 1 planes, async tiles marching 3 and 1 */
  const tsr_stage_cuda_tuning tunings[] = {{0,0,0,0,0,0,0},{32,2,3,32,5,-1,0},{64,4,4,64,7,-1,0},
                                           {256,1,2,128,1,-1,0},{0,0,0,0,0,1,0},{0,0,0,0,0,1,3},
                                           {0,0,0,0,0,1,1},{0,0,0,0,0,2,3},{0,0,0,0,0,2,1}};
  long cases = 0;
  for (int pr = 0; pr < 2; ++pr)
  for (int model = 0; model < TSR_MODEL_COUNT; ++model)
  for (int dim = 2; dim <= 3; ++dim)
  for (auto &tu : tunings) {
    if (!(tsr_models[model].methods & TSR_METHODS_EXPLICIT)) continue; /* no stage to emulate */
    const tsr_prec prec = pr ? TSR_PREC_SINGLE : TSR_PREC_DOUBLE;
    tsr_stage_cuda_set_tuning(&tu);
    int ncomp = tsr_models[model].ncomp;
    /* 3D: more than a tile (64 x 16) where tiles may run, smaller elsewhere (time) */
    const bool tiles = tu.tile3 >= 0;
    const int len2[3] = {37, 23, 1}, len3[3] = {tiles ? 67 : 19, tiles ? 35 : 13, tiles ? 4 : 11};
    tsr_box box = {{0,0,0},{1,1,1}};
    for (int d = 0; d < dim; ++d) { box.lo[d] = lo[d]; box.hi[d] = lo[d] + (dim == 2 ? len2[d] : len3[d]); }
    tsr_field *f[10];
    for (int q = 0; q < 10; ++q) tsr_field_create_as(dim, &box, 1, ncomp, TSR_MEM_HOST, prec, &f[q]);
    tsr_field *in = f[0], *base = f[1], *acc = f[2], *src = f[3], *out = f[4], *acc2 = f[5], *out2 = f[6], *acc0 = f[7];
    double p[8]; for (int q = 0; q < tsr_models[model].nparam; ++q) p[q] = 0.3 + 0.17 * q;
    /* ignition's sub-steps (tens here, some cut at nmax) need a fast rate and nmax >= 1 */
    if (model == TSR_MODEL_IGNITION) { p[1] = 400; p[2] = 0.6; p[3] = 0.01; p[4] = 50; }
    double hx[3] = {0.11, 0.13, 0.17};
    tsr_stage_desc d = {model, ncomp, TSR_STAGE_EULER, 0.0123, {}};
    tsr_stage_coef_init(&d.coef, model, p, hx, in);
    // regions: whole, interior, shell slabs, off-centre, and x slabs 2, 3 and 8 cells thin
    tsr_box rg[20]; int nrg = 0;
    rg[nrg++] = box; rg[nrg++] = tsr_box_grow(&box, dim, -1);
    tsr_box rest = box;
    for (int dd = 0; dd < dim; ++dd) { tsr_box l = rest, h = rest; l.hi[dd] = l.lo[dd] + 1; h.lo[dd] = h.hi[dd] - 1;
      rg[nrg++] = l; rg[nrg++] = h; rest.lo[dd] += 1; rest.hi[dd] -= 1; }
    tsr_box off = box; for (int dd = 0; dd < dim; ++dd) { off.lo[dd] = box.lo[dd] + 2 + dd; off.hi[dd] = box.hi[dd] - 1 - (dd == 0 ? 5 : 1); }
    rg[nrg++] = off;
    const int thin[3] = {2, 3, 8};
    for (int w = 0; w < 3; ++w) { tsr_box t = box; t.lo[0] = box.lo[0] + 1; t.hi[0] = t.lo[0] + thin[w]; t.lo[1] += w; rg[nrg++] = t; }
    const size_t es = tsr_prec_size(prec);
    size_t n = (size_t)ncomp * in->scomp, bytes = n * es;
    unsigned char *poison = (unsigned char *)malloc(es);
    memset(poison, 0xff, es); /* a NaN in either precision */
    for (int kind = 0; kind < 8; ++kind) for (int hs = 0; hs < 2; ++hs) for (int r = 0; r < nrg; ++r) {
      d.kind = (tsr_stage_kind)kind;
      fill(in, n); fill(base, n); fill(acc, n); fill(src, n);
      memset(out->data, 0xff, bytes);
      memcpy(acc2->data, acc->data, bytes); memcpy(acc0->data, acc->data, bytes); memcpy(out2->data, out->data, bytes);
      bool ub = kind != 0 && kind != 7, ua = kind >= 4;
      tsr_stage_host(&d, &rg[r], in, ub ? base : NULL, ua ? acc : NULL, hs ? src : NULL, out);
      if (emu_stage(&d, &rg[r], in, ub ? base : NULL, ua ? acc2 : NULL, hs ? src : NULL, out2)) { printf("err %s\n", tsr_err_message()); return 1; }
      if (memcmp(out->data, out2->data, bytes) || memcmp(acc->data, acc2->data, bytes)) {
        if (fails++ < 10) printf("FAIL prec %d model %d dim %d kind %d src %d region %d tuning %d,%d,%d tile %d,%d\n", pr, model, dim, kind, hs, r, tu.bx3, tu.by3, tu.chunk3, tu.tile3, tu.chunkt3);
      }
      const unsigned char *o2 = (const unsigned char *)out2->data, *a2 = (const unsigned char *)acc2->data,
                          *a0 = (const unsigned char *)acc0->data;
      for (int c = 0; c < ncomp; ++c) for (int k = in->gbox.lo[2]; k < in->gbox.hi[2]; ++k)
        for (int j = in->gbox.lo[1]; j < in->gbox.hi[1]; ++j) for (int i = in->gbox.lo[0]; i < in->gbox.hi[0]; ++i) {
          size_t at = (size_t)tsr_field_at(in, c, i, j, k) * es;
          bool inr = inside(&rg[r], i, j, k);
          if (!inr && (memcmp(o2 + at, poison, es) || memcmp(a2 + at, a0 + at, es))) { if (fails++ < 10) printf("WRITE OUTSIDE region %d\n", r); }
          if (inr && memcmp(o2 + at, poison, es) == 0) { if (fails++ < 10) printf("NOT WRITTEN region %d\n", r); }
        }
      cases++;
    }
    free(poison);
    for (int q = 0; q < 10; ++q) tsr_field_destroy(&f[q]);
  }
  const long bcases = batch_cases(&fails);
  printf("cases %ld (thin-x launches %ld, tile launches %ld, %ld of them async), batch cases %ld, "
         "fails %d\n", cases, thin_launches, tile_launches, atile_launches, bcases, fails);
  return fails != 0 || cases == 0 || bcases != 16 || thin_launches == 0 || tile_launches == 0 ||
         atile_launches == 0;
}
