// Per-cell work counts on the device; the contract is in kernels/work.h. One thread per cell
// gathers the cell's stencil into a 3x3(x3) double window, as tsr_work_host does for single
// precision, and calls the same pure per-cell function, so the counts are the host's.
#include "kernels/work.h"

#include "kernels/cuda_util.h"

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void work_cells(const T *__restrict__ u, tsr_cell_coef kw, int model, int ncomp,
                           ptrdiff_t origin, ptrdiff_t sy, ptrdiff_t sz, ptrdiff_t sc, int nx,
                           int ny, int64_t cells, int32_t *__restrict__ work) {
  const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= cells) return;
  const int64_t nxy = (int64_t)nx * ny;
  const int64_t k = e / nxy, j = (e - k * nxy) / nx, i = e - k * nxy - j * nx;
  const ptrdiff_t at = origin + k * sz + j * sy + i;
  const int n = kw.dim == 3 ? 27 : 9, wo = kw.dim == 3 ? 13 : 4;
  double w[TSR_MAX_COMP * 27];
  for (int c = 0; c < ncomp; ++c) {
    double *wp = w + c * n + wo;
    const ptrdiff_t p = at + c * sc;
    wp[0] = (double)u[p];
    wp[-1] = (double)u[p - 1];
    wp[1] = (double)u[p + 1];
    wp[-3] = (double)u[p - sy];
    wp[3] = (double)u[p + sy];
    if (kw.dim == 3) {
      wp[-9] = (double)u[p - sz];
      wp[9] = (double)u[p + sz];
    }
  }
  work[e] = tsr_model_work(model, w + wo, &kw);
}

}  // namespace

extern "C" tsr_err tsr_work_cuda(const tsr_stage_desc *s, const tsr_box *rg, const tsr_field *u,
                                 int32_t *work, cudaStream_t stream) {
  TSR_CHECK(u && u->mem == TSR_MEM_DEVICE, TSR_ERR_STATE, "tsr_work_cuda needs a device field");
  TSR_CHECK(tsr_box_empty(rg) || tsr_box_contains(&u->box, rg), TSR_ERR_STATE,
            "tsr_work_cuda: the region is not inside the field's owned box");
  TSR_CHECK(u->ncomp == tsr_models[s->model].ncomp, TSR_ERR_STATE,
            "tsr_work_cuda: the field has %d components, model %s %d", u->ncomp,
            tsr_models[s->model].name, tsr_models[s->model].ncomp);
  if (tsr_box_empty(rg)) return TSR_OK;
  tsr_cell_coef kw = s->coef;
  kw.dt = s->dt;
  kw.sy = 3;
  kw.sz = 9;
  kw.scomp = kw.dim == 3 ? 27 : 9;
  const int nx = tsr_box_len(rg, 0), ny = tsr_box_len(rg, 1);
  const int64_t cells = tsr_box_cells(rg);
  const ptrdiff_t origin = tsr_field_at(u, 0, rg->lo[0], rg->lo[1], rg->lo[2]);
  const unsigned blocks = (unsigned)((cells + kThreads - 1) / kThreads);
  if (u->prec == TSR_PREC_SINGLE)
    work_cells<float><<<blocks, kThreads, 0, stream>>>(static_cast<const float *>(u->data), kw,
                                                       s->model, u->ncomp, origin, u->sy, u->sz,
                                                       u->scomp, nx, ny, cells, work);
  else
    work_cells<double><<<blocks, kThreads, 0, stream>>>(static_cast<const double *>(u->data), kw,
                                                        s->model, u->ncomp, origin, u->sy, u->sz,
                                                        u->scomp, nx, ny, cells, work);
  TSR_CUDA_LAUNCHED("work kernel");
  return TSR_OK;
}
