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

struct faces_arg {
  tsr_bc_face fc[TSR_BC_MAX_FACES];
  const double *vals[TSR_BC_MAX_FACES];
  unsigned start[TSR_BC_MAX_FACES + 1]; /* first thread of each face; start[n] = all threads */
  int n;
};

/* Thread t's face point and component of u (every field of a batch runs the same). */
template <typename T>
__device__ __forceinline__ void fill(const faces_arg &fa, unsigned t, T *__restrict__ u,
                                     const tsr_box &box, const tsr_box &gbox, ptrdiff_t sy,
                                     ptrdiff_t sz, ptrdiff_t sc, int part) {
  if (t >= fa.start[fa.n]) return;
  int i = 0;
  while (t >= fa.start[i + 1]) ++i;
  const tsr_bc_face &fc = fa.fc[i];
  const unsigned k = t - fa.start[i], n = (unsigned)fc.n1 * (unsigned)fc.n2;
  const int q = (int)(k / n);
  const unsigned ab = k - (unsigned)q * n;
  const int a = (int)(ab % (unsigned)fc.n1), b = (int)(ab / (unsigned)fc.n1);
  if (!tsr_bc_covers(part, fc.o1, fc.o2, a, b, box.hi[fc.t1] - box.lo[fc.t1],
                     box.hi[fc.t2] - box.lo[fc.t2]))
    return;
  const double g = fa.vals[i][k];
  int idx[3];
  idx[fc.t1] = box.lo[fc.t1] + fc.o1 + a;
  idx[fc.t2] = box.lo[fc.t2] + fc.o2 + b;
  const int d = fc.axis;
  for (int l = 1; l <= fc.layers; ++l) {
    int gi[3] = {idx[0], idx[1], idx[2]}, mi[3] = {idx[0], idx[1], idx[2]};
    gi[d] = fc.side == 0 ? box.lo[d] - l : box.hi[d] - 1 + l;
    mi[d] = fc.side == 0 ? box.lo[d] + l - 1 : box.hi[d] - l;
    ptrdiff_t go = q * sc + (gi[2] - gbox.lo[2]) * sz + (gi[1] - gbox.lo[1]) * sy + (gi[0] - gbox.lo[0]);
    ptrdiff_t mo = q * sc + (mi[2] - gbox.lo[2]) * sz + (mi[1] - gbox.lo[1]) * sy + (mi[0] - gbox.lo[0]);
    u[go] = (T)tsr_ghost_value(fc.type, g, (double)u[mo], l, fc.h);
  }
}

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

/* The launch's faces (those with cells) and its thread count into *fa, *total. */
tsr_err faces_of(int nface, const tsr_bc_face *const *faces, const double *const *vals,
                 const tsr_field *f, faces_arg *fa, unsigned long long *total) {
  TSR_CHECK(nface >= 0 && nface <= TSR_BC_MAX_FACES, TSR_ERR_STATE,
            "tsr_bc_apply_cuda: %d faces (at most %d)", nface, TSR_BC_MAX_FACES);
  fa->n = 0;
  fa->start[0] = 0;
  *total = 0;
  for (int i = 0; i < nface; ++i) {
    const unsigned long long cells = (unsigned long long)faces[i]->n1 * faces[i]->n2 * f->ncomp;
    if (cells == 0) continue;
    fa->fc[fa->n] = *faces[i];
    fa->vals[fa->n] = vals[i];
    *total += cells;
    TSR_CHECK(*total < (1ull << 32), TSR_ERR_STATE,
              "tsr_bc_apply_cuda: %llu face values (at most 2^32 in one launch)", *total);
    fa->start[++fa->n] = (unsigned)*total;
  }
  return TSR_OK;
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
