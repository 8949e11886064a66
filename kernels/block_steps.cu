// Whole steps of a small grid in a cluster of thread blocks (kernels/block_steps.h).
//
// The box is cut along its last axis (y in 2D, z in 3D) into G strips of layers, one for each
// block of a thread-block cluster (G up to 8, one SM each). Every block keeps a copy of each
// field the steps write in its shared memory, laid out as the field is (so every offset
// holds), and updates its strip's cells; a cell of the strip's first or last layer is stored
// into the neighbouring block's copy too (distributed shared memory), where it is a halo
// layer, and a cluster barrier ends each stage. A block fills the faces' ghosts of its own
// copy; those beside another block's strip read stale mirrors but are never read by it (a
// stencil of radius 1 reads the ghosts beside its own cells only). At the end each block
// writes its own layers back (the first and last block the faces' ghost layers too), so the
// fields hold what the launches would have left in them. Where the fields do not fit in
// shared memory one block steps them in place in global memory (slower than the launches past
// a few thousand cells: only on request).
//
// Thread t of a block takes column i = t % bx and rows t / bx, t / bx + by, ... of its strip
// (a row: one j, k), so a warp reads consecutive cells and the work needs no division per
// cell. The stage kind is a run-time value (one kernel per model, dimension, source and
// precision serves every scheme): tsr_stage_update switches on it either way.
#include "kernels/block_steps.h"

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include "kernels/cuda_util.h"
#include "kernels/model_dispatch_cuda.cuh"

namespace {

namespace cg = cooperative_groups;

#include "kernels/boundary_cuda.cuh"

/* The fields the steps write, staged: slots 0-2 (NULL where no stage names one) and RK4's
 * accumulator (3). */
constexpr int kArrays = 4;

/* Blocks a cluster at most: 8, the portable cluster size (more need the non-portable
 * attribute, which an H100 allows up to 16). */
#ifndef TSR_BLOCK_STEPS_CLUSTER
#define TSR_BLOCK_STEPS_CLUSTER 8
#endif
constexpr int kCluster = TSR_BLOCK_STEPS_CLUSTER;

template <typename T>
struct block_args {
  T *arr[kArrays];
  size_t count[kArrays]; /* values of each allocation (ghosts and padding included) */
  int staged;            /* 1: the arrays run in shared memory, copied in and out once */
  const T *src;
  tsr_cell_coef coef;
  double dt;
  tsr_block_scheme sc;
  tsr_box box, gbox;
  ptrdiff_t origin, sy, sz, sc_stride; /* the box's first cell; field strides */
  ptrdiff_t sl;                        /* the stride of a layer (sy in 2D, sz in 3D) */
  int nx, ny, nl;                      /* cells a row, rows a plane, layers */
  int rows_per_layer;                  /* 1 in 2D, ny in 3D */
  int last;                            /* the cut axis: 1 in 2D, 2 in 3D */
  int bx, by;                          /* threads along a row, rows at once */
  long long n;
};

/* Threads a block at most: one-component models fit 1024 threads' 64 registers; two components
 * take more registers a cell (tsr_stage_cuda's register kernel: 40-62), so half. */
template <int NC>
constexpr int kThreads = NC == 1 ? 1024 : 512;

template <typename T>
__device__ __forceinline__ T *slot_of(int k, T *s0, T *s1, T *s2) {
  return k == 0 ? s0 : k == 1 ? s1 : s2;
}

/* One cell at offset o: tsr_stage_cuda's stage_column and store_cell for that cell (the stencil
 * in a 3x3(x3) register array of strides 1, 3, 9, the right-hand side, the source, the
 * update), with plain loads; the value also into lo and hi where not NULL (the neighbouring
 * blocks' copies of out). */
template <int M, int NC, int DIM, bool SRC, typename T>
__device__ __forceinline__ void cell(const block_args<T> &a, const tsr_cell_coef &kc, int kind,
                                     const T *in, const T *base, T *acc, T *out, T *lo, T *hi,
                                     ptrdiff_t o) {
  constexpr ptrdiff_t wy = 3, wz = 9, wc = DIM == 3 ? 27 : 9, wo = DIM == 3 ? 13 : 4;
  double w[NC * wc];
#pragma unroll
  for (int c = 0; c < NC; ++c) {
    const T *p = in + o + c * a.sc_stride;
    double *wp = w + c * wc + wo;
    wp[0] = (double)p[0];
    wp[-1] = (double)p[-1];
    wp[1] = (double)p[1];
    wp[-wy] = (double)p[-a.sy];
    wp[wy] = (double)p[a.sy];
    if constexpr (DIM == 3) {
      wp[-wz] = (double)p[-a.sz];
      wp[wz] = (double)p[a.sz];
    }
  }
  double r[TSR_MAX_COMP] = {0};
  tsr_model_rhs(M, w + wo, &kc, r);
#pragma unroll
  for (int c = 0; c < NC; ++c) {
    const ptrdiff_t ac = o + c * a.sc_stride;
    const double rc = SRC ? r[c] + (double)a.src[ac] : r[c];
    const double b = tsr_stage_uses_base(kind) ? (double)base[ac] : 0.0;
    double av = tsr_stage_uses_acc(kind) ? (double)acc[ac] : 0.0;
    const T v = (T)tsr_stage_update(kind, a.dt, b, w[c * wc + wo], rc, &av);
    out[ac] = v;
    if (lo) lo[ac] = v;
    if (hi) hi[ac] = v;
    if (tsr_stage_uses_acc(kind) && kind != TSR_STAGE_RK4_4) acc[ac] = (T)av;
  }
}

/* A barrier of the cluster where the blocks share their copies, else of the block. */
__device__ __forceinline__ void barrier(cg::cluster_group &cl, int G) {
  if (G > 1) cl.sync();
  else __syncthreads();
}

template <int M, int NC, int DIM, bool SRC, typename T>
__global__ void __launch_bounds__(kThreads<NC>)
    block_kernel(const __grid_constant__ block_args<T> a, const __grid_constant__ faces_arg fa) {
  extern __shared__ __align__(16) unsigned char smem[];
  cg::cluster_group cl = cg::this_cluster();
  const int G = (int)cl.num_blocks(), rank = (int)cl.block_rank();
  const int l0 = rank * a.nl / G, l1 = (rank + 1) * a.nl / G; /* this block's layers */
  tsr_cell_coef kc = a.coef;
  kc.dim = DIM;
  kc.sy = 3;
  kc.sz = 9;
  kc.scomp = DIM == 3 ? 27 : 9;
  const int t = (int)threadIdx.x, tx = t % a.bx, ty = t / a.bx;
  const bool works = ty < a.by;
  /* the arrays where the steps run: copies in shared memory with the fields' layout, or the
   * fields themselves */
  T *p[kArrays];
  size_t off = 0;
#pragma unroll
  for (int k = 0; k < kArrays; ++k) {
    p[k] = a.arr[k];
    if (!a.staged || !a.arr[k]) continue;
    p[k] = reinterpret_cast<T *>(smem) + off;
    for (size_t q = (size_t)t; q < a.count[k]; q += blockDim.x) p[k][q] = a.arr[k][q];
    off += a.count[k];
  }
  barrier(cl, G); /* no block stores into a copy still being loaded */
  /* the thread's first row (r = j + ny k in 3D, r = j in 2D) as (j, k), and the step to its
   * next one */
  const int r0 = l0 * a.rows_per_layer, r1 = l1 * a.rows_per_layer;
  const int j0 = (r0 + ty) % a.ny, k0 = (r0 + ty) / a.ny, dj = a.by % a.ny, dk = a.by / a.ny;
  T *u = p[0], *s1 = p[1], *s2 = p[2], *acc = p[3];
  const unsigned nfill = fa.start[fa.n];
  for (long long step = 0; step < a.n; ++step) {
    for (int s = 0; s < a.sc.nstage; ++s) {
      const int kind = a.sc.kind[s];
      T *in = slot_of(a.sc.in[s], u, s1, s2), *out = slot_of(a.sc.out[s], u, s1, s2);
      for (unsigned q = (unsigned)t; q < nfill; q += blockDim.x)
        fill(fa, q, in, a.box, a.gbox, a.sy, a.sz, a.sc_stride, TSR_BC_WHOLE);
      __syncthreads();
      T *lo = rank > 0 ? cl.map_shared_rank(out, (unsigned)(rank - 1)) : nullptr;
      T *hi = rank < G - 1 ? cl.map_shared_rank(out, (unsigned)(rank + 1)) : nullptr;
      if (works)
        for (int r = r0 + ty, j = j0, k = k0; r < r1; r += a.by) {
          const ptrdiff_t row = a.origin + (ptrdiff_t)j * a.sy + (ptrdiff_t)k * a.sz;
          const int layer = DIM == 3 ? k : j;
          T *rlo = layer == l0 ? lo : nullptr, *rhi = layer == l1 - 1 ? hi : nullptr;
          for (int i = tx; i < a.nx; i += a.bx)
            cell<M, NC, DIM, SRC, T>(a, kc, kind, in, u, acc, out, rlo, rhi, row + i);
          j += dj;
          k += dk;
          if (j >= a.ny) {
            j -= a.ny;
            ++k;
          }
        }
      barrier(cl, G);
    }
    /* u^{n+1} is in the result slot: it becomes slot 0, as the driver's swap does */
    T *res = slot_of(a.sc.result, u, s1, s2);
    if (a.sc.result == 1) s1 = u;
    else if (a.sc.result == 2) s2 = u;
    u = res;
  }
  if (!a.staged) return;
  /* each copy back to the field it came from (the slots' swaps are the same whichever memory
   * they point at): this block's layers, and the ghost layers beyond the faces of the cut
   * axis from the first and the last block */
  const int from = rank == 0 ? a.gbox.lo[a.last] : a.box.lo[a.last] + l0;
  const int to = rank == G - 1 ? a.gbox.hi[a.last] : a.box.lo[a.last] + l1;
  const ptrdiff_t b0 = (ptrdiff_t)(from - a.gbox.lo[a.last]) * a.sl;
  const ptrdiff_t len = (ptrdiff_t)(to - from) * a.sl;
#pragma unroll
  for (int k = 0; k < kArrays; ++k)
    if (a.arr[k])
      for (int c = 0; c < NC; ++c)
        for (ptrdiff_t q = t; q < len; q += blockDim.x)
          a.arr[k][c * a.sc_stride + b0 + q] = p[k][c * a.sc_stride + b0 + q];
}

template <typename T>
struct launch {
  int dim;
  bool src;
  block_args<T> &a;
  const faces_arg &fa;
  cudaStream_t st;
  size_t bytes; /* dynamic shared memory: the staged arrays */
  int cluster;  /* blocks: the cluster's size wanted (1 where not staged) */
  int threads;
  cudaError_t *err;
  template <int M, int NC, int DIM, bool SRC>
  void one() const {
    auto kernel = block_kernel<M, NC, DIM, SRC, T>;
    if (bytes > 48 * 1024) {
      *err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
      if (*err != cudaSuccess) return;
    }
    if (kCluster > 8) {
      *err = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
      if (*err != cudaSuccess) return;
    }
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;
    cudaLaunchConfig_t cfg = {};
    cfg.blockDim = dim3((unsigned)(threads < kThreads<NC> ? threads : kThreads<NC>));
    cfg.dynamicSmemBytes = bytes;
    cfg.stream = st;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    /* a smaller cluster where the GPU cannot hold this one (its SMs' shared memory) */
    for (int g = cluster;; g /= 2) {
      cfg.gridDim = dim3((unsigned)g);
      attr.val.clusterDim.x = (unsigned)g;
      attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
      int fits = 0;
      if (g == 1 || (cudaOccupancyMaxActiveClusters(&fits, kernel, &cfg) == cudaSuccess && fits > 0))
        break;
      cudaGetLastError();
    }
    a.bx = a.nx < (int)cfg.blockDim.x ? a.nx : (int)cfg.blockDim.x;
    a.by = (int)cfg.blockDim.x / a.bx;
    *err = cudaLaunchKernelEx(&cfg, kernel, a, fa);
  }
  template <int M, int NC>
  void go() const {
    if (dim == 3) src ? one<M, NC, 3, true>() : one<M, NC, 3, false>();
    else src ? one<M, NC, 2, true>() : one<M, NC, 2, false>();
  }
};

/* The shared memory a block may have on the current device (0 where it cannot be asked). */
size_t smem_optin() {
  int dev = 0, n = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&n, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return (size_t)n;
}

/* The arrays the steps of sc write (a slot no stage names is left alone) into use[], and
 * their bytes. */
size_t arrays_of(const tsr_block_scheme *sc, tsr_field *const slot[3], tsr_field *acc,
                 tsr_field *use[kArrays]) {
  use[0] = slot[0];
  use[1] = use[2] = use[3] = nullptr;
  for (int k = 0; k < sc->nstage; ++k) {
    use[sc->in[k]] = slot[sc->in[k]];
    use[sc->out[k]] = slot[sc->out[k]];
    if (tsr_stage_uses_acc(sc->kind[k])) use[3] = acc;
  }
  use[sc->result] = slot[sc->result];
  size_t bytes = 0;
  for (int k = 0; k < kArrays; ++k) bytes += use[k] ? tsr_field_bytes(use[k]) : 0;
  return bytes;
}

bool shaped_like(const tsr_field *f, const tsr_field *g) {
  return f->mem == TSR_MEM_DEVICE && tsr_box_equal(&f->gbox, &g->gbox) &&
         tsr_box_equal(&f->box, &g->box) && f->sy == g->sy && f->sz == g->sz &&
         f->scomp == g->scomp && f->ncomp == g->ncomp && f->prec == g->prec;
}

template <typename T>
tsr_err steps_typed(const tsr_stage_desc *s, const tsr_block_scheme *sc, tsr_field *const slot[3],
                    tsr_field *acc, const tsr_field *src, const faces_arg &fa, int64_t n,
                    cudaStream_t stream) {
  const tsr_field *f = slot[0];
  const int dim = s->coef.dim;
  block_args<T> a;
  tsr_field *use[kArrays];
  size_t bytes = arrays_of(sc, slot, acc, use);
  for (int k = 0; k < kArrays; ++k) {
    a.arr[k] = use[k] ? static_cast<T *>(use[k]->data) : nullptr;
    a.count[k] = use[k] ? tsr_field_bytes(use[k]) / sizeof(T) : 0;
  }
  a.staged = bytes <= smem_optin();
  if (!a.staged) bytes = 0;
  a.src = src ? static_cast<const T *>(src->data) : nullptr;
  a.coef = s->coef;
  a.coef.dt = s->dt; /* as tsr_stage_cuda sets it: models that integrate over the step read it */
  a.dt = s->dt;
  a.sc = *sc;
  a.box = f->box;
  a.gbox = f->gbox;
  a.origin = tsr_field_at(f, 0, f->box.lo[0], f->box.lo[1], f->box.lo[2]);
  a.sy = f->sy;
  a.sz = f->sz;
  a.sc_stride = f->scomp;
  a.last = dim == 3 ? 2 : 1;
  a.sl = dim == 3 ? f->sz : f->sy;
  a.nx = tsr_box_len(&f->box, 0);
  a.ny = tsr_box_len(&f->box, 1);
  a.nl = tsr_box_len(&f->box, a.last);
  a.rows_per_layer = dim == 3 ? a.ny : 1;
  a.n = (long long)n;
  const int cluster = a.staged ? (a.nl < kCluster ? a.nl : kCluster) : 1;
  /* threads for a block's cells, in whole warps */
  const long cells = (long)a.nx * a.rows_per_layer * ((a.nl + cluster - 1) / cluster);
  const int threads = cells < 1024 ? (int)((cells + 31) / 32 * 32) : 1024;
  cudaError_t err = cudaSuccess;
  tsr_dispatch_model(s->model, launch<T>{dim, src != nullptr, a, fa, stream, bytes, cluster,
                                         threads, &err});
  TSR_CUDA(err);
  TSR_CUDA_LAUNCHED("block steps kernel");
  return TSR_OK;
}

}  // namespace

extern "C" int tsr_block_steps_staged(const tsr_block_scheme *sc, tsr_field *const slot[3],
                                      tsr_field *acc) {
  tsr_field *use[kArrays];
  return arrays_of(sc, slot, acc, use) <= smem_optin();
}

extern "C" tsr_err tsr_block_steps_cuda(const tsr_stage_desc *s, const tsr_block_scheme *sc,
                                        tsr_field *const slot[3], tsr_field *acc,
                                        const tsr_field *src, int nface,
                                        const tsr_bc_face *const *faces,
                                        const double *const *vals, int64_t n,
                                        cudaStream_t stream) {
  const tsr_field *f = slot[0];
  TSR_CHECK(f && f->mem == TSR_MEM_DEVICE && f->ghost >= 1, TSR_ERR_STATE,
            "tsr_block_steps_cuda: slot 0 must be a device field with ghost cells");
  TSR_CHECK(s->model >= 0 && s->model < TSR_MODEL_COUNT &&
                (tsr_models[s->model].methods & TSR_METHODS_EXPLICIT) &&
                (s->coef.dim == 2 || s->coef.dim == 3) && f->ncomp <= 2 &&
                f->ncomp == tsr_models[s->model].ncomp,
            TSR_ERR_STATE, "tsr_block_steps_cuda: model %d in %dD has no explicit stage here",
            s->model, s->coef.dim);
  TSR_CHECK(sc->nstage >= 1 && sc->nstage <= 4 && sc->result >= 1 && sc->result <= 2,
            TSR_ERR_STATE, "tsr_block_steps_cuda: a scheme of %d stages, result slot %d",
            sc->nstage, sc->result);
  int needs_acc = 0;
  for (int k = 0; k < sc->nstage; ++k) {
    const int in = sc->in[k], out = sc->out[k];
    TSR_CHECK(in >= 0 && in < 3 && out >= 0 && out < 3 && in != out && slot[in] && slot[out] &&
                  shaped_like(slot[in], f) && shaped_like(slot[out], f) &&
                  sc->kind[k] >= TSR_STAGE_EULER && sc->kind[k] <= TSR_STAGE_RK4_4,
              TSR_ERR_STATE, "tsr_block_steps_cuda: stage %d (kind %d) reads slot %d and writes "
              "slot %d: distinct slots of slot 0's shape expected", k, sc->kind[k], in, out);
    needs_acc |= tsr_stage_uses_acc(sc->kind[k]);
  }
  TSR_CHECK(!slot[sc->result] || shaped_like(slot[sc->result], f), TSR_ERR_STATE,
            "tsr_block_steps_cuda: the result slot differs from slot 0");
  TSR_CHECK(!needs_acc || (acc && shaped_like(acc, f)), TSR_ERR_STATE,
            "tsr_block_steps_cuda: RK4 stages need an accumulator of slot 0's shape");
  TSR_CHECK(!src || shaped_like(src, f), TSR_ERR_STATE,
            "tsr_block_steps_cuda: the source differs from slot 0 in shape or precision");
  if (n <= 0 || tsr_box_empty(&f->box)) return TSR_OK;
  faces_arg fa;
  unsigned long long total;
  TSR_CALL(faces_of(nface, faces, vals, f, &fa, &total));
  if (f->prec == TSR_PREC_SINGLE) return steps_typed<float>(s, sc, slot, acc, src, fa, n, stream);
  return steps_typed<double>(s, sc, slot, acc, src, fa, n, stream);
}
