// Parareal's field operations on the device (ops.h): one thread per owned cell and component,
// each calling the per-cell arithmetic of kernels/parareal.h that the host loops call.
#include "solver/parareal/ops.h"

#include <math.h>

#include "kernels/cuda_util.h"
#include "kernels/parareal.h"
#include "kernels/reduce.h"

namespace {

constexpr int kThreads = 256;

// The owned box of f as (nx, ny, nz) and cell e's offset in f (component c).
struct Shape {
  int lo[3], n[3];
  ptrdiff_t sy, sz, sc, g[3];  // strides, and the allocated box's lower corner
  __device__ ptrdiff_t at(int c, int i, int j, int k) const {
    return c * sc + (k - g[2]) * sz + (j - g[1]) * sy + (i - g[0]);
  }
  __device__ void cell(int64_t e, int *i, int *j, int *k) const {
    const int64_t nxy = (int64_t)n[0] * n[1];
    *k = (int)(e / nxy);
    *j = (int)((e - *k * nxy) / n[0]);
    *i = (int)(e - *k * nxy - (int64_t)*j * n[0]);
    *i += lo[0];
    *j += lo[1];
    *k += lo[2];
  }
};

Shape shape_of(const tsr_field *f) {
  Shape s;
  for (int d = 0; d < 3; ++d) {
    s.lo[d] = f->box.lo[d];
    s.n[d] = tsr_box_len(&f->box, d);
    s.g[d] = f->gbox.lo[d];
  }
  s.sy = f->sy;
  s.sz = f->sz;
  s.sc = f->scomp;
  return s;
}

template <typename T>
__global__ void restrict_cells(const T *__restrict__ fine, Shape fs, T *__restrict__ coarse,
                               Shape cs, int r, int dim, int64_t cells) {
  const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= cells) return;
  const int c = blockIdx.y;
  int I, J, K;
  cs.cell(e, &I, &J, &K);
  const int rz = dim == 3 ? r : 1;
  double s = 0.0;
  for (int k = 0; k < rz; ++k)
    for (int j = 0; j < r; ++j)
      for (int i = 0; i < r; ++i)
        s += (double)fine[fs.at(c, r * I + i, r * J + j, dim == 3 ? r * K + k : K)];
  coarse[cs.at(c, I, J, K)] = (T)(s / (double)(r * r * rz));
}

template <typename T>
__global__ void prolong_cells(const T *__restrict__ coarse, Shape cs, T *__restrict__ fine,
                              Shape fs, int r, int dim, int64_t cells) {
  const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= cells) return;
  const int c = blockIdx.y;
  int f[3];
  fs.cell(e, &f[0], &f[1], &f[2]);
  int I[3], side[3] = {0, 0, 0};
  double w[3] = {0, 0, 0}, nb[3] = {0, 0, 0};
  for (int d = 0; d < 3; ++d) I[d] = d < dim ? f[d] / r : f[d];
  for (int d = 0; d < dim; ++d) w[d] = tsr_parareal_weight(f[d], r, &side[d]);
  const double c0 = (double)coarse[cs.at(c, I[0], I[1], I[2])];
  for (int d = 0; d < dim; ++d) {
    int J[3] = {I[0], I[1], I[2]};
    J[d] += side[d];
    nb[d] = (double)coarse[cs.at(c, J[0], J[1], J[2])];
  }
  fine[fs.at(c, f[0], f[1], f[2])] = (T)tsr_parareal_prolong_value(c0, nb, w, dim);
}

// out := the correction; scratch := |out_new - out_old| for the reduction that follows.
template <typename T>
__global__ void correct_cells(const T *__restrict__ f, const T *__restrict__ gnew,
                              const T *__restrict__ gold, T *__restrict__ out,
                              T *__restrict__ scratch, Shape s, int64_t cells) {
  const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= cells) return;
  int i, j, k;
  s.cell(e, &i, &j, &k);
  const ptrdiff_t o = s.at(blockIdx.y, i, j, k);
  const T old = out[o];
  const T v = (T)tsr_parareal_correct_value((double)f[o], (double)gnew[o], (double)gold[o]);
  out[o] = v;
  scratch[o] = (T)fabs((double)v - (double)old);
}

dim3 grid_of(const tsr_field *f) {
  const int64_t cells = tsr_box_cells(&f->box);
  return dim3((unsigned)((cells + kThreads - 1) / kThreads), (unsigned)f->ncomp);
}

}  // namespace

extern "C" tsr_err tsr_parareal_copy_cuda(tsr_field *dst, const tsr_field *src,
                                          cudaStream_t stream) {
  TSR_CHECK(tsr_field_bytes(dst) == tsr_field_bytes(src) && tsr_box_equal(&dst->gbox, &src->gbox),
            TSR_ERR_STATE, "parareal copy: fields of different shapes");
  TSR_CUDA(cudaMemcpyAsync(dst->data, src->data, tsr_field_bytes(dst), cudaMemcpyDeviceToDevice,
                           stream));
  return TSR_OK;
}

extern "C" tsr_err tsr_parareal_restrict_cuda(int r, const tsr_field *fine, tsr_field *coarse,
                                              cudaStream_t stream) {
  const int64_t cells = tsr_box_cells(&coarse->box);
  if (!cells) return TSR_OK;
  if (coarse->prec == TSR_PREC_SINGLE)
    restrict_cells<float><<<grid_of(coarse), kThreads, 0, stream>>>(
        static_cast<const float *>(fine->data), shape_of(fine),
        static_cast<float *>(coarse->data), shape_of(coarse), r, coarse->dim, cells);
  else
    restrict_cells<double><<<grid_of(coarse), kThreads, 0, stream>>>(
        static_cast<const double *>(fine->data), shape_of(fine),
        static_cast<double *>(coarse->data), shape_of(coarse), r, coarse->dim, cells);
  TSR_CUDA_LAUNCHED("parareal restriction");
  return TSR_OK;
}

extern "C" tsr_err tsr_parareal_prolong_cuda(int r, const tsr_field *coarse, tsr_field *fine,
                                             cudaStream_t stream) {
  const int64_t cells = tsr_box_cells(&fine->box);
  if (!cells) return TSR_OK;
  if (fine->prec == TSR_PREC_SINGLE)
    prolong_cells<float><<<grid_of(fine), kThreads, 0, stream>>>(
        static_cast<const float *>(coarse->data), shape_of(coarse),
        static_cast<float *>(fine->data), shape_of(fine), r, fine->dim, cells);
  else
    prolong_cells<double><<<grid_of(fine), kThreads, 0, stream>>>(
        static_cast<const double *>(coarse->data), shape_of(coarse),
        static_cast<double *>(fine->data), shape_of(fine), r, fine->dim, cells);
  TSR_CUDA_LAUNCHED("parareal prolongation");
  return TSR_OK;
}

extern "C" tsr_err tsr_parareal_correct_cuda(const tsr_field *f, const tsr_field *gnew,
                                             const tsr_field *gold, tsr_field *out,
                                             tsr_field *scratch, double chg[2],
                                             cudaStream_t stream) {
  chg[0] = chg[1] = 0.0;
  const int64_t cells = tsr_box_cells(&out->box);
  if (!cells) return TSR_OK;
  const Shape s = shape_of(out);
  if (out->prec == TSR_PREC_SINGLE)
    correct_cells<float><<<grid_of(out), kThreads, 0, stream>>>(
        static_cast<const float *>(f->data), static_cast<const float *>(gnew->data),
        static_cast<const float *>(gold->data), static_cast<float *>(out->data),
        static_cast<float *>(scratch->data), s, cells);
  else
    correct_cells<double><<<grid_of(out), kThreads, 0, stream>>>(
        static_cast<const double *>(f->data), static_cast<const double *>(gnew->data),
        static_cast<const double *>(gold->data), static_cast<double *>(out->data),
        static_cast<double *>(scratch->data), s, cells);
  TSR_CUDA_LAUNCHED("parareal correction");
  // the monitors' deterministic reductions: the largest change, and max |u| from min and max
  for (int c = 0; c < out->ncomp; ++c) {
    double d[TSR_NNORM], u[TSR_NNORM];
    tsr_err err = tsr_reduce_cuda(scratch, NULL, c, d, stream);
    if (!err) err = tsr_reduce_cuda(out, NULL, c, u, stream);
    if (err) return err;
    const double umax = fmax(fabs(u[TSR_NORM_MIN]), fabs(u[TSR_NORM_MAX]));
    chg[0] = d[TSR_NORM_MAX] > chg[0] || isnan(d[TSR_NORM_MAX]) ? d[TSR_NORM_MAX] : chg[0];
    chg[1] = umax > chg[1] || isnan(umax) ? umax : chg[1];
  }
  for (int q = 0; q < 2; ++q)
    if (isnan(chg[q])) chg[q] = INFINITY;
  return TSR_OK;
}
