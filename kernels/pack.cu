// Pack/unpack kernels of the device halo exchange; the contract is in kernels/pack.h.
#include "kernels/pack.h"

#include "kernels/cuda_util.h"

namespace {

constexpr int kThreads = 256;
// Enough blocks per segment to fill the GPU for large faces; the loop strides over the rest.
constexpr int64_t kMaxBlocksX = 1024;

// Moves one element per thread and iteration between segment blockIdx.y of the field and the
// buffer. The index arithmetic is 64-bit: a field can exceed 2^31 elements.
// V: an unsigned integer of the value's size; moving bits keeps every value exact.
template <bool kPack, typename V>
__global__ void move_segments(const tsr_pack_seg *__restrict__ segs, tsr_pack_geom g,
                              V *__restrict__ field, V *__restrict__ buf) {
  const tsr_pack_seg s = segs[blockIdx.y];
  const int64_t nx = s.n[0], nxy = nx * s.n[1];
  const int64_t cells = nxy * s.n[2];
  const int64_t total = cells * g.ncomp;
  const ptrdiff_t base = (ptrdiff_t)(s.lo[2] - g.glo[2]) * g.sz +
                         (ptrdiff_t)(s.lo[1] - g.glo[1]) * g.sy + (s.lo[0] - g.glo[0]);
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
    const int64_t c = e / cells;
    int64_t r = e - c * cells;
    const int64_t k = r / nxy;
    r -= k * nxy;
    const int64_t j = r / nx;
    const int64_t i = r - j * nx;
    const ptrdiff_t at = base + c * g.scomp + k * g.sz + j * g.sy + i;
    if (kPack)
      buf[s.off + e] = field[at];
    else
      field[at] = buf[s.off + e];
  }
}

template <bool kPack>
tsr_err launch(const tsr_pack_seg *segs, int nseg, int64_t most_cells, const tsr_pack_geom *g,
               void *field, void *buf, cudaStream_t stream) {
  if (nseg <= 0) return TSR_OK;
  int64_t elems = most_cells * g->ncomp;
  int64_t bx = (elems + kThreads - 1) / kThreads;
  if (bx < 1) bx = 1;
  if (bx > kMaxBlocksX) bx = kMaxBlocksX;
  dim3 grid((unsigned)bx, (unsigned)nseg);
  if (g->esize == 4)
    move_segments<kPack><<<grid, kThreads, 0, stream>>>(segs, *g, static_cast<uint32_t *>(field),
                                                         static_cast<uint32_t *>(buf));
  else
    move_segments<kPack><<<grid, kThreads, 0, stream>>>(segs, *g, static_cast<uint64_t *>(field),
                                                         static_cast<uint64_t *>(buf));
  TSR_CUDA_LAUNCHED(kPack ? "halo pack" : "halo unpack");
  return TSR_OK;
}

// One x row per block and iteration: blockIdx.y walks rows (j), blockIdx.z planes of every
// component (c * n[2] + k), threads the row.
template <typename V>
__global__ void copy_rows(int lo0, int lo1, int lo2, int n0, int n1, int64_t planes, int n2,
                          tsr_pack_geom gs, const V *__restrict__ src, tsr_pack_geom gd,
                          V *__restrict__ dst) {
  for (int64_t p = blockIdx.z; p < planes; p += gridDim.z) {
    const int64_t c = p / n2, k = lo2 + (p - c * n2);
    for (int j = lo1 + (int)blockIdx.y; j < lo1 + n1; j += (int)gridDim.y) {
      const V *s = src + c * gs.scomp + (k - gs.glo[2]) * gs.sz + (ptrdiff_t)(j - gs.glo[1]) * gs.sy +
                   (lo0 - gs.glo[0]);
      V *d = dst + c * gd.scomp + (k - gd.glo[2]) * gd.sz + (ptrdiff_t)(j - gd.glo[1]) * gd.sy +
             (lo0 - gd.glo[0]);
      for (int i = (int)(blockIdx.x * blockDim.x + threadIdx.x); i < n0;
           i += (int)(gridDim.x * blockDim.x))
        d[i] = s[i];
    }
  }
}

}  // namespace

extern "C" tsr_err tsr_copy_box_cuda(const int lo[3], const int n[3], const tsr_pack_geom *gs,
                                     const void *src, const tsr_pack_geom *gd, void *dst,
                                     cudaStream_t stream) {
  if (n[0] <= 0 || n[1] <= 0 || n[2] <= 0) return TSR_OK;
  const int64_t planes = (int64_t)n[2] * gs->ncomp;
  int64_t bx = (n[0] + kThreads - 1) / kThreads;
  // a block walks several rows: fewer, longer blocks keep the copy at memory speed
  dim3 grid((unsigned)(bx < 64 ? bx : 64), (unsigned)(n[1] < 16 ? n[1] : 16),
            (unsigned)(planes < 65535 ? planes : 65535));
  if (gs->esize == 4)
    copy_rows<<<grid, kThreads, 0, stream>>>(lo[0], lo[1], lo[2], n[0], n[1], planes, n[2], *gs,
                                             static_cast<const uint32_t *>(src), *gd,
                                             static_cast<uint32_t *>(dst));
  else
    copy_rows<<<grid, kThreads, 0, stream>>>(lo[0], lo[1], lo[2], n[0], n[1], planes, n[2], *gs,
                                             static_cast<const uint64_t *>(src), *gd,
                                             static_cast<uint64_t *>(dst));
  TSR_CUDA_LAUNCHED("box copy");
  return TSR_OK;
}

extern "C" tsr_err tsr_pack_cuda(const tsr_pack_seg *segs, int nseg, int64_t most_cells,
                                 const tsr_pack_geom *geom, const void *data, void *buf,
                                 cudaStream_t stream) {
  // the pack instantiation only reads field: the cast serves the shared kernel signature
  return launch<true>(segs, nseg, most_cells, geom, const_cast<void *>(data), buf, stream);
}

extern "C" tsr_err tsr_unpack_cuda(const tsr_pack_seg *segs, int nseg, int64_t most_cells,
                                   const tsr_pack_geom *geom, const void *buf, void *data,
                                   cudaStream_t stream) {
  // the unpack instantiation only reads buf
  return launch<false>(segs, nseg, most_cells, geom, data, const_cast<void *>(buf), stream);
}
