// Ghost layers of the physical boundary on the device: one launch for every face of a field,
// one thread per face point and component, the same tsr_ghost_value as the host. A face
// reads cells inside the box or in ghosts that neighbours fill (time.fuse's faces reach along
// exchanged axes), never another physical face's ghosts, so no face reads what another writes
// and one launch gives the bits of one launch per face (Nsight Compute, nvidia-h200, 512^3
// heat: 75 us a step in six launches, 62 us in one; the x faces, one 32-byte sector per cell,
// take most of it).
#include "kernels/boundary.h"
#include "kernels/cuda_util.h"

namespace {

#include "kernels/boundary_cuda.cuh"

template <typename T>
__global__ void apply(const faces_arg fa, T *__restrict__ u, tsr_box box, tsr_box gbox,
                      ptrdiff_t sy, ptrdiff_t sz, ptrdiff_t sc, int part) {
  fill(fa, blockIdx.x * blockDim.x + threadIdx.x, u, box, gbox, sy, sz, sc, part);
}

/* A batch: field blockIdx.y of the table (__grid_constant__: read in place, not copied). */
template <typename T>
struct fields_arg {
  T *u[TSR_BC_BATCH_MAX];
};

template <typename T>
__global__ void apply_batch(const faces_arg fa, const __grid_constant__ fields_arg<T> fs,
                            tsr_box box, tsr_box gbox, ptrdiff_t sy, ptrdiff_t sz, ptrdiff_t sc,
                            int part) {
  fill(fa, blockIdx.x * blockDim.x + threadIdx.x, fs.u[blockIdx.y], box, gbox, sy, sz, sc, part);
}

}  // namespace

extern "C" tsr_err tsr_bc_apply_cuda(int nface, const tsr_bc_face *const *faces,
                                     const double *const *vals, tsr_field *f, int part,
                                     cudaStream_t stream) {
  TSR_CHECK(f->mem == TSR_MEM_DEVICE, TSR_ERR_STATE, "tsr_bc_apply_cuda needs a device field");
  if (f->ghost == 0) return TSR_OK;
  faces_arg fa;
  unsigned long long total;
  TSR_CALL(faces_of(nface, faces, vals, f, &fa, &total));
  if (total == 0) return TSR_OK;
  const int threads = 256;
  const unsigned blocks = (unsigned)((total + threads - 1) / threads);
  if (f->prec == TSR_PREC_SINGLE)
    apply<<<blocks, threads, 0, stream>>>(fa, static_cast<float *>(f->data), f->box, f->gbox,
                                          f->sy, f->sz, f->scomp, part);
  else
    apply<<<blocks, threads, 0, stream>>>(fa, static_cast<double *>(f->data), f->box, f->gbox,
                                          f->sy, f->sz, f->scomp, part);
  TSR_CUDA_LAUNCHED("boundary ghost fill");
  return TSR_OK;
}

namespace {

template <typename T>
tsr_err apply_batch_typed(const faces_arg &fa, unsigned long long total, int n,
                          tsr_field *const *f, int part, cudaStream_t stream) {
  const int threads = 256;
  const unsigned blocks = (unsigned)((total + threads - 1) / threads);
  for (int f0 = 0; f0 < n; f0 += TSR_BC_BATCH_MAX) {
    const int nb = n - f0 < TSR_BC_BATCH_MAX ? n - f0 : TSR_BC_BATCH_MAX;
    fields_arg<T> fs;
    for (int k = 0; k < TSR_BC_BATCH_MAX; ++k) fs.u[k] = k < nb ? static_cast<T *>(f[f0 + k]->data) : nullptr;
    apply_batch<T><<<dim3(blocks, (unsigned)nb), threads, 0, stream>>>(
        fa, fs, f[0]->box, f[0]->gbox, f[0]->sy, f[0]->sz, f[0]->scomp, part);
    TSR_CUDA_LAUNCHED("batched boundary ghost fill");
  }
  return TSR_OK;
}

}  // namespace

extern "C" tsr_err tsr_bc_apply_cuda_batch(int nface, const tsr_bc_face *const *faces,
                                           const double *const *vals, int n, tsr_field *const *f,
                                           int part, cudaStream_t stream) {
  if (n <= 0) return TSR_OK;
  for (int k = 0; k < n; ++k)
    TSR_CHECK(f[k] && f[k]->mem == TSR_MEM_DEVICE && tsr_box_equal(&f[k]->box, &f[0]->box) &&
                  tsr_box_equal(&f[k]->gbox, &f[0]->gbox) && f[k]->sy == f[0]->sy &&
                  f[k]->sz == f[0]->sz && f[k]->scomp == f[0]->scomp &&
                  f[k]->ncomp == f[0]->ncomp && f[k]->prec == f[0]->prec,
              TSR_ERR_STATE, "tsr_bc_apply_cuda_batch: field %d is not a device field shaped "
              "like field 0", k);
  if (f[0]->ghost == 0) return TSR_OK;
  faces_arg fa;
  unsigned long long total;
  TSR_CALL(faces_of(nface, faces, vals, f[0], &fa, &total));
  if (total == 0) return TSR_OK;
  if (f[0]->prec == TSR_PREC_SINGLE) return apply_batch_typed<float>(fa, total, n, f, part, stream);
  return apply_batch_typed<double>(fa, total, n, f, part, stream);
}
