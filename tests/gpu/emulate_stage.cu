/* CPU emulation of tsr_stage_cuda's launch (not built by CMake; see below). It includes
 * kernels/stage_cuda.cu, runs the kernel's own per-thread body (stage_column, thread_cells,
 * pick_shape: __host__ __device__) for every thread of the grid the launcher would use, and
 * compares with tsr_stage_host bit for bit, plus poison checks outside the region, for every
 * model x kind x dim x source x region x four launch shapes. It checks indexing, chunking and
 * the register stencil without a GPU; the device's arithmetic (-fmad=false) is covered by
 * tests/gpu/test_stage.c on a GPU machine.
 *
 * Build and run from the repository root after building the library (build/):
 *   nvcc -O2 -fmad=false -Xcompiler -ffp-contract=off -arch=sm_90 -I. -Ibuild/generated \
 *     -I/usr/include/hdf5/openmpi -I/usr/lib/x86_64-linux-gnu/openmpi/include -DTSR_HAVE_CUDA=1 \
 *     tests/gpu/emulate_stage.cu -o build/emulate_stage -Xcompiler -fopenmp build/libtessera_core.a \
 *     -L/usr/lib/x86_64-linux-gnu/openmpi/lib -lmpi -lgomp \
 *     -L/usr/lib/x86_64-linux-gnu/hdf5/openmpi -lhdf5 -lyaml -lmuparser -lnccl
 *   build/emulate_stage      # prints "cases 5120 fails 0", exits 0 */
#include "kernels/stage_cuda.cu"
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <cstdlib>

template <int M, int NC, int KIND, int DIM, bool SRC>
void emu(const stage_args &a, const shape &sh) {
  for (unsigned bz = 0; bz < sh.grid.z; ++bz)
    for (unsigned by = 0; by < sh.grid.y; ++by)
      for (unsigned bx = 0; bx < sh.grid.x; ++bx)
        for (unsigned ty = 0; ty < sh.block.y; ++ty)
          for (unsigned tx = 0; tx < sh.block.x; ++tx) {
            uint3 t = {tx, ty, 0}, b = {bx, by, bz};
            int i, j, m0;
            if (thread_cells<DIM>(a, t, b, sh.block, &i, &j, &m0))
              stage_column<M, NC, KIND, DIM, SRC>(a, i, (int)sh.block.x, j, m0);
          }
}
template <int M, int NC, int KIND>
void ek(int dim, bool src, const shape &sh, const stage_args &a) {
  if (dim == 3) { if (src) emu<M, NC, KIND, 3, true>(a, sh); else emu<M, NC, KIND, 3, false>(a, sh); }
  else { if (src) emu<M, NC, KIND, 2, true>(a, sh); else emu<M, NC, KIND, 2, false>(a, sh); }
}
template <int M, int NC>
void em(int kind, int dim, bool src, const shape &sh, const stage_args &a) {
  switch (kind) {
  case 0: ek<M, NC, 0>(dim, src, sh, a); break; case 1: ek<M, NC, 1>(dim, src, sh, a); break;
  case 2: ek<M, NC, 2>(dim, src, sh, a); break; case 3: ek<M, NC, 3>(dim, src, sh, a); break;
  case 4: ek<M, NC, 4>(dim, src, sh, a); break; case 5: ek<M, NC, 5>(dim, src, sh, a); break;
  case 6: ek<M, NC, 6>(dim, src, sh, a); break; case 7: ek<M, NC, 7>(dim, src, sh, a); break;
  }
}
static tsr_err emu_stage(const tsr_stage_desc *s, const tsr_box *rg, tsr_field *in, tsr_field *base,
                         tsr_field *acc, tsr_field *src, tsr_field *out) {
  tsr_field *all[] = {in, base, acc, src, out};
  for (auto f : all) if (f) f->mem = TSR_MEM_DEVICE;
  stage_args a; shape sh; bool empty;
  tsr_err e = prepare(s, rg, in, base, acc, src, out, &a, &sh, &empty);
  for (auto f : all) if (f) f->mem = TSR_MEM_HOST;
  if (e || empty) return e;
  int dim = s->coef.dim; bool hs = src;
  switch (s->model) {
  case 0: em<0, 1>(s->kind, dim, hs, sh, a); break;
  case 1: em<1, 1>(s->kind, dim, hs, sh, a); break;
  case 2: em<2, 2>(s->kind, dim, hs, sh, a); break;
  case 3: em<3, 2>(s->kind, dim, hs, sh, a); break;
  case 4: em<4, 1>(s->kind, dim, hs, sh, a); break;
  }
  return TSR_OK;
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double uniform() { g_rng ^= g_rng >> 12; g_rng ^= g_rng << 25; g_rng ^= g_rng >> 27;
  return (double)((g_rng * 0x2545f4914f6cdd1dull) >> 11) * (1.0 / 9007199254740992.0); }
static int fails = 0;
static int inside(const tsr_box *r, int i, int j, int k) {
  return i >= r->lo[0] && i < r->hi[0] && j >= r->lo[1] && j < r->hi[1] && k >= r->lo[2] && k < r->hi[2]; }

int main() {
  const int lo[3] = {4, -3, 7};
  const tsr_stage_cuda_tuning tunings[] = {{0,0,0,0,0},{32,2,3,32,5},{64,4,4,64,7},{256,1,2,128,1}};
  long cases = 0;
  for (int model = 0; model < TSR_MODEL_COUNT; ++model)
  for (int dim = 2; dim <= 3; ++dim)
  for (auto &tu : tunings) {
    tsr_stage_cuda_set_tuning(&tu);
    int ncomp = tsr_models[model].ncomp;
    const int len2[3] = {37, 23, 1}, len3[3] = {19, 13, 11};
    tsr_box box = {{0,0,0},{1,1,1}};
    for (int d = 0; d < dim; ++d) { box.lo[d] = lo[d]; box.hi[d] = lo[d] + (dim == 2 ? len2[d] : len3[d]); }
    tsr_field *f[10];
    for (int q = 0; q < 10; ++q) tsr_field_create(dim, &box, 1, ncomp, &f[q]);
    tsr_field *in = f[0], *base = f[1], *acc = f[2], *src = f[3], *out = f[4], *acc2 = f[5], *out2 = f[6], *acc0 = f[7];
    double p[8]; for (int q = 0; q < tsr_models[model].nparam; ++q) p[q] = 0.3 + 0.17 * q;
    double hx[3] = {0.11, 0.13, 0.17};
    tsr_stage_desc d = {model, ncomp, TSR_STAGE_EULER, 0.0123, {}};
    tsr_stage_coef_init(&d.coef, model, p, hx, in);
    // regions
    tsr_box rg[16]; int nrg = 0;
    rg[nrg++] = box; rg[nrg++] = tsr_box_grow(&box, dim, -1);
    tsr_box rest = box;
    for (int dd = 0; dd < dim; ++dd) { tsr_box l = rest, h = rest; l.hi[dd] = l.lo[dd] + 1; h.lo[dd] = h.hi[dd] - 1;
      rg[nrg++] = l; rg[nrg++] = h; rest.lo[dd] += 1; rest.hi[dd] -= 1; }
    tsr_box off = box; for (int dd = 0; dd < dim; ++dd) { off.lo[dd] = box.lo[dd] + 2 + dd; off.hi[dd] = box.hi[dd] - 1 - (dd == 0 ? 5 : 1); }
    rg[nrg++] = off;
    size_t n = (size_t)ncomp * in->scomp;
    uint64_t pb = 0x7ff8dead0000beefull; double nan; memcpy(&nan, &pb, 8);
    for (int kind = 0; kind < 8; ++kind) for (int hs = 0; hs < 2; ++hs) for (int r = 0; r < nrg; ++r) {
      d.kind = (tsr_stage_kind)kind;
      for (size_t q = 0; q < n; ++q) { in->data[q] = 0.5 + uniform(); base->data[q] = 0.5 + uniform();
        acc->data[q] = 0.5 + uniform(); src->data[q] = 0.5 + uniform(); out->data[q] = nan; }
      memcpy(acc2->data, acc->data, n * 8); memcpy(acc0->data, acc->data, n * 8); memcpy(out2->data, out->data, n * 8);
      bool ub = kind != 0 && kind != 7, ua = kind >= 4;
      tsr_stage_host(&d, &rg[r], in, ub ? base : NULL, ua ? acc : NULL, hs ? src : NULL, out);
      if (emu_stage(&d, &rg[r], in, ub ? base : NULL, ua ? acc2 : NULL, hs ? src : NULL, out2)) { printf("err %s\n", tsr_err_message()); return 1; }
      if (memcmp(out->data, out2->data, n * 8) || memcmp(acc->data, acc2->data, n * 8)) {
        if (fails++ < 10) printf("FAIL model %d dim %d kind %d src %d region %d tuning %d,%d,%d\n", model, dim, kind, hs, r, tu.bx3, tu.by3, tu.chunk3);
      }
      // outside untouched
      for (int c = 0; c < ncomp; ++c) for (int k = in->gbox.lo[2]; k < in->gbox.hi[2]; ++k)
        for (int j = in->gbox.lo[1]; j < in->gbox.hi[1]; ++j) for (int i = in->gbox.lo[0]; i < in->gbox.hi[0]; ++i) {
          ptrdiff_t at = tsr_field_at(in, c, i, j, k);
          bool inr = inside(&rg[r], i, j, k);
          if (!inr && (memcmp(&out2->data[at], &nan, 8) || memcmp(&acc2->data[at], &acc0->data[at], 8))) { if (fails++ < 10) printf("WRITE OUTSIDE\n"); }
          if (inr && memcmp(&out2->data[at], &nan, 8) == 0) { if (fails++ < 10) printf("NOT WRITTEN\n"); }
        }
      cases++;
    }
    for (int q = 0; q < 10; ++q) tsr_field_destroy(&f[q]);
  }
  printf("cases %ld fails %d\n", cases, fails);
  return fails != 0;
}
