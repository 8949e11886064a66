// Whole steps of a small grid in a cluster of thread blocks (kernels/block_steps.h).
//
// The box is cut along its last axis (y in 2D, z in 3D) into G strips of layers, one for each
// block of a thread-block cluster (G up to 16, one SM each). Every block keeps in its shared
// memory a copy of its strip of each field the steps write, with one layer more on each side
// (a halo; at the box's faces, the field's ghost layers), laid out as the field is from the
// copy's first layer on, and updates its strip's cells; a cell of the strip's first or last
// layer is stored into the neighbouring block's copy too (distributed shared memory), where it
// is a halo layer, and a cluster barrier ends each stage. A block fills the faces' ghosts of
// its own layers (a stencil of radius 1 reads no ghost beside another block's cells). At the
// end each block writes its own layers back (the first and last block the faces' ghost layers
// too), so the fields hold what the launches would have left in them. Where the strips do not
// fit in shared memory one block steps the fields in place in global memory (slower than the
// launches past a few thousand cells: only on request).
//
// One launch takes several jobs (parareal's slices, each its own fields of one shape): a
// cluster each, side by side on the GPU.
//
// Thread t of a block takes column i = t % bx and rows t / bx, t / bx + by, ... of its strip
// (a row: one j, k), so a warp reads consecutive cells and the work needs no division per
// cell. One kernel per model, dimension, source and precision serves every scheme: a stage's
// sweep is compiled for each stage kind and picked by a switch once a stage, and the copies in
// shared memory are indexed with int, known to be shared. The first version switched on the
// kind per cell through generic 64-bit addresses: 1.5x the time of a step (one H200, 256^2).
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

/* Jobs a launch at most (their pointers travel in the kernel's parameters). */
constexpr int kJobs = 32;



/* The cluster sizes to try, in order, for nl layers, into g[] (their count): 8, the portable
 * size (or nl, where fewer), where the strips fit; else 16 (the non-portable size an H100
 * allows), then fewer; only 1 without clusters. */
int clusters_for(int nl, bool clusters, int g[5]) {
  int n = 0;
  if (!clusters) {
    g[n++] = 1;
    return n;
  }
  g[n++] = nl < 8 ? nl : 8;
  if (nl >= 16) g[n++] = 16;
  for (int c = g[0] / 2; c >= 1; c /= 2) g[n++] = c;
  return n;
}

template <typename T>
struct block_job {
  T *arr[kArrays];
  const T *src;
  long long n;
};

template <typename T>
struct block_args {
  block_job<T> job[kJobs];
  ptrdiff_t cs; /* in shared memory: a copy's component stride (its layers times sl) */
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
};

/* Threads a block at most: one-component models fit 1024 threads' 64 registers; two components
 * take more registers a cell (tsr_stage_cuda's register kernel: 40-62), so half. */
template <int NC>
constexpr int kThreads = NC == 1 ? 1024 : 512;

/* Block r of G's layers [*l0, *l1) (of nl, from the box's first) and its copy's [*w0, *w1):
 * a layer more on each side, the field's ghost layers (glo below, ghi above) at the faces. */
__host__ __device__ inline void strip_of(int r, int G, int nl, int glo, int ghi, int *l0, int *l1,
                                         int *w0, int *w1) {
  *l0 = (int)((long long)r * nl / G);
  *l1 = (int)((long long)(r + 1) * nl / G);
  *w0 = r == 0 ? -glo : *l0 - 1;
  *w1 = r == G - 1 ? nl + ghi : *l1 + 1;
}

template <typename T>
__device__ __forceinline__ T *slot_of(int k, T *s0, T *s1, T *s2) {
  return k == 0 ? s0 : k == 1 ? s1 : s2;
}

/* Offsets: int within a block's shared memory (its copies are small), ptrdiff_t in the
 * fields themselves. */
template <bool STAGED>
struct index_of {
  using type = ptrdiff_t;
};
template <>
struct index_of<true> {
  using type = int;
};

/* What a thread's sweep of its block's cells needs: its column and first row (r = j + ny k in
 * 3D, r = j in 2D) as (j, k) and offset, the step to its next row, the block's layers and its
 * copy's offsets. */
template <typename I>
struct rows_of {
  int tx, r, r1, j, k, dj, dk, l0, l1;
  I row, drow, wrap; /* the first row's offset; the step to the next row, and past a plane */
  I sy, sz, cs, scs; /* strides: rows, planes, the arrays' components, the source's */
  I dlo, dhi;        /* a cell's offset in the neighbours' copies minus its own */
};

/* One stage of kind KIND over the thread's cells: tsr_stage_cuda's stage_column and store_cell
 * for each (the stencil in a 3x3(x3) register array of strides 1, 3, 9, the right-hand side,
 * the source, the update), with plain loads from in, base and acc and stores into out; the
 * value of a cell of the block's first or last layer also into lo or hi (the neighbouring
 * blocks' copies of out) where not NULL. src is the source from the copy's first offset. */
template <int M, int NC, int DIM, bool SRC, int KIND, typename I, typename T>
__device__ __forceinline__ void sweep(const block_args<T> &a, const tsr_cell_coef &kc,
                                      const rows_of<I> &w0,
                                      const T *__restrict__ src, const T *__restrict__ in,
                                      const T *__restrict__ base, T *__restrict__ acc,
                                      T *__restrict__ out, T *lo, T *hi) {
  constexpr int wy = 3, wz = 9, wc = DIM == 3 ? 27 : 9, wo = DIM == 3 ? 13 : 4;
  rows_of<I> rw = w0;
  for (; rw.r < rw.r1; rw.r += a.by) {
    const int layer = DIM == 3 ? rw.k : rw.j;
    T *rlo = layer == rw.l0 ? lo : nullptr, *rhi = layer == rw.l1 - 1 ? hi : nullptr;
    for (int i = rw.tx; i < a.nx; i += a.bx) {
      const I ol = rw.row + i;
      double w[NC * wc];
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        const T *p = in + ol + c * rw.cs;
        double *wp = w + c * wc + wo;
        wp[0] = (double)p[0];
        wp[-1] = (double)p[-1];
        wp[1] = (double)p[1];
        wp[-wy] = (double)p[-rw.sy];
        wp[wy] = (double)p[rw.sy];
        if constexpr (DIM == 3) {
          wp[-wz] = (double)p[-rw.sz];
          wp[wz] = (double)p[rw.sz];
        }
      }
      double r[TSR_MAX_COMP] = {0};
      tsr_model_rhs(M, w + wo, &kc, r);
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        const I ac = ol + c * rw.cs;
        const double rc = SRC ? r[c] + (double)src[ol + c * rw.scs] : r[c];
        const double b = tsr_stage_uses_base(KIND) ? (double)base[ac] : 0.0;
        double av = tsr_stage_uses_acc(KIND) ? (double)acc[ac] : 0.0;
        const T v = (T)tsr_stage_update(KIND, a.dt, b, w[c * wc + wo], rc, &av);
        out[ac] = v;
        if (rlo) rlo[ac + rw.dlo] = v;
        if (rhi) rhi[ac + rw.dhi] = v;
        if (tsr_stage_uses_acc(KIND) && KIND != TSR_STAGE_RK4_4) acc[ac] = (T)av;
      }
    }
    rw.row += rw.drow;
    rw.j += rw.dj;
    rw.k += rw.dk;
    if (rw.j >= a.ny) {
      rw.j -= a.ny;
      ++rw.k;
      rw.row += rw.wrap;
    }
  }
}

/* The block's cluster. Clusters need sm_90: code compiled for an older GPU (run there, or
 * from its PTX on a newer one) has clusters of one block, and the host launches it so
 * (clusters_here). */
struct cluster_view {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cg::cluster_group cl;
  __device__ cluster_view() : cl(cg::this_cluster()) {}
  __device__ int size() const { return (int)cl.num_blocks(); }
  __device__ int rank() const { return (int)cl.block_rank(); }
  template <typename T>
  __device__ T *map(T *p, int r) {
    return cl.map_shared_rank(p, (unsigned)r);
  }
  /* a barrier of the cluster where the blocks share their copies, else of the block */
  __device__ void sync(int G) {
    if (G > 1) cl.sync();
    else __syncthreads();
  }
#else
  __device__ int size() const { return 1; }
  __device__ int rank() const { return 0; }
  template <typename T>
  __device__ T *map(T *, int) {
    return nullptr;
  }
  __device__ void sync(int) { __syncthreads(); }
#endif
};

/* STAGED: each block's strip in its shared memory; else one block on the fields in place. */
template <int M, int NC, int DIM, bool SRC, bool STAGED, typename T>
__global__ void __launch_bounds__(kThreads<NC>)
    block_kernel(const __grid_constant__ block_args<T> a, const __grid_constant__ faces_arg fa) {
  using I = typename index_of<STAGED>::type;
  extern __shared__ __align__(16) unsigned char smem[];
  cluster_view cl;
  const int G = cl.size(), rank = cl.rank();
  const block_job<T> &jb = a.job[blockIdx.x / G];
  const int glo = a.box.lo[a.last] - a.gbox.lo[a.last], ghi = a.gbox.hi[a.last] - a.box.hi[a.last];
  int l0, l1, w0, w1; /* this block's layers, and its copy's */
  strip_of(rank, G, a.nl, glo, ghi, &l0, &l1, &w0, &w1);
  /* the field's offset of the copy's first layer (0 in place), and the neighbours' */
  ptrdiff_t b0 = 0, blo = 0, bhi = 0;
  if (STAGED) {
    int m0, m1, v0, v1;
    b0 = (ptrdiff_t)(w0 + glo) * a.sl;
    strip_of(rank > 0 ? rank - 1 : 0, G, a.nl, glo, ghi, &m0, &m1, &v0, &v1);
    blo = (ptrdiff_t)(v0 + glo) * a.sl;
    strip_of(rank < G - 1 ? rank + 1 : rank, G, a.nl, glo, ghi, &m0, &m1, &v0, &v1);
    bhi = (ptrdiff_t)(v0 + glo) * a.sl;
  }
  const I cs = (I)(STAGED ? a.cs : a.sc_stride);
  /* the stencil's register array has constant strides, so that the model's offsets fold */
  tsr_cell_coef kc = a.coef;
  kc.dim = DIM;
  kc.sy = 3;
  kc.sz = 9;
  kc.scomp = DIM == 3 ? 27 : 9;
  const int t = (int)threadIdx.x, tx = t % a.bx, ty = t / a.bx;
  /* the arrays where the steps run: copies in shared memory, or the fields themselves */
  T *p[kArrays];
  size_t off = 0;
  const ptrdiff_t wlen = (ptrdiff_t)(w1 - w0) * a.sl;
#pragma unroll
  for (int k = 0; k < kArrays; ++k) {
    if constexpr (!STAGED) {
      p[k] = jb.arr[k];
    } else {
      p[k] = nullptr;
      if (!jb.arr[k]) continue;
      p[k] = reinterpret_cast<T *>(smem) + off;
      for (int c = 0; c < NC; ++c)
        for (ptrdiff_t q = t; q < wlen; q += blockDim.x)
          p[k][c * cs + q] = jb.arr[k][c * a.sc_stride + b0 + q];
      off += (size_t)(NC * cs);
    }
  }
  cl.sync(G); /* no block stores into a copy still being loaded */
  rows_of<I> rw;
  rw.tx = tx;
  rw.r = l0 * a.rows_per_layer + ty;
  rw.r1 = ty < a.by ? l1 * a.rows_per_layer : 0; /* a thread past the rows sweeps none */
  rw.j = rw.r % a.ny;
  rw.k = rw.r / a.ny;
  rw.dj = a.by % a.ny;
  rw.dk = a.by / a.ny;
  rw.l0 = l0;
  rw.l1 = l1;
  rw.sy = (I)a.sy;
  rw.sz = (I)a.sz;
  rw.cs = cs;
  rw.scs = (I)a.sc_stride;
  rw.row = (I)(a.origin - b0) + rw.j * rw.sy + rw.k * rw.sz;
  rw.drow = rw.dj * rw.sy + rw.dk * rw.sz;
  rw.wrap = rw.sz - a.ny * rw.sy;
  rw.dlo = (I)(b0 - blo);
  rw.dhi = (I)(b0 - bhi);
  const T *src = SRC ? jb.src + b0 : nullptr;
  T *u = p[0], *s1 = p[1], *s2 = p[2], *acc = p[3];
  const unsigned nfill = fa.start[fa.n];
  const int cut = STAGED ? a.last : -1, wlo = a.box.lo[a.last] + w0, whi = a.box.lo[a.last] + w1;
  for (long long step = 0; step < jb.n; ++step) {
    for (int s = 0; s < a.sc.nstage; ++s) {
      const int kind = a.sc.kind[s];
      T *in = slot_of(a.sc.in[s], u, s1, s2), *out = slot_of(a.sc.out[s], u, s1, s2);
      for (unsigned q = (unsigned)t; q < nfill; q += blockDim.x)
        fill(fa, q, in, a.box, a.gbox, a.sy, a.sz, (ptrdiff_t)cs, TSR_BC_WHOLE, cut, wlo, whi, b0);
      __syncthreads();
      T *lo = rank > 0 ? cl.map(out, rank - 1) : nullptr;
      T *hi = rank < G - 1 ? cl.map(out, rank + 1) : nullptr;
      switch (kind) {
#define TSR_BLOCK_SWEEP(K)                                                                  \
  case K: sweep<M, NC, DIM, SRC, K, I, T>(a, kc, rw, src, in, u, acc, out, lo, hi); break;
        TSR_BLOCK_SWEEP(TSR_STAGE_EULER)
        TSR_BLOCK_SWEEP(TSR_STAGE_SSP2_2)
        TSR_BLOCK_SWEEP(TSR_STAGE_SSP3_2)
        TSR_BLOCK_SWEEP(TSR_STAGE_SSP3_3)
        TSR_BLOCK_SWEEP(TSR_STAGE_RK4_1)
        TSR_BLOCK_SWEEP(TSR_STAGE_RK4_2)
        TSR_BLOCK_SWEEP(TSR_STAGE_RK4_3)
        TSR_BLOCK_SWEEP(TSR_STAGE_RK4_4)
#undef TSR_BLOCK_SWEEP
      default: break;
      }
      cl.sync(G);
    }
    /* u^{n+1} is in the result slot: it becomes slot 0, as the driver's swap does */
    T *res = slot_of(a.sc.result, u, s1, s2);
    if (a.sc.result == 1) s1 = u;
    else if (a.sc.result == 2) s2 = u;
    u = res;
  }
  if constexpr (STAGED) {
    /* each copy back to the field it came from (the slots' swaps are the same whichever
     * memory they point at): this block's layers, and the ghost layers beyond the faces of
     * the cut axis from the first and the last block */
    const int from = rank == 0 ? w0 : l0, to = rank == G - 1 ? w1 : l1;
    const ptrdiff_t q0 = (ptrdiff_t)(from - w0) * a.sl, len = (ptrdiff_t)(to - from) * a.sl;
#pragma unroll
    for (int k = 0; k < kArrays; ++k)
      if (jb.arr[k])
        for (int c = 0; c < NC; ++c)
          for (ptrdiff_t q = t; q < len; q += blockDim.x)
            jb.arr[k][c * a.sc_stride + b0 + q0 + q] = p[k][c * cs + q0 + q];
  }
}

/* The most layers a copy holds for G blocks. */
int copy_layers(int G, int nl, int glo, int ghi) {
  int most = 0;
  for (int r = 0; r < G; ++r) {
    int l0, l1, w0, w1;
    strip_of(r, G, nl, glo, ghi, &l0, &l1, &w0, &w1);
    most = w1 - w0 > most ? w1 - w0 : most;
  }
  return most;
}

/* The shared memory a block may have on the current device (0 where it cannot be asked). */
size_t smem_optin() {
  size_t n = 0;
  if (tsr_cuda_smem_optin(&n) != cudaSuccess) cudaGetLastError();
  return n;
}

/* Whether the current device runs this build's kernels with clusters: code of sm_90 or later
 * (built for an older GPU, it may run on a newer one from its PTX, and then has none). */
bool clusters_here() { return tsr_cuda_code_arch() >= 90; }

/* Shared memory for G blocks' copies of narr arrays of field f (0: G does not divide its
 * layers into strips of one or more). */
size_t copy_bytes(const tsr_field *f, int narr, int G) {
  const int last = f->dim == 3 ? 2 : 1;
  const int nl = tsr_box_len(&f->box, last);
  if (G > nl) return 0;
  const size_t sl = (size_t)(last == 2 ? f->sz : f->sy);
  const int layers = copy_layers(G, nl, f->box.lo[last] - f->gbox.lo[last],
                                 f->gbox.hi[last] - f->box.hi[last]);
  return (size_t)narr * (size_t)f->ncomp * (size_t)layers * sl * tsr_prec_size(f->prec);
}

template <typename T>
struct launch {
  int dim;
  bool src;
  block_args<T> &a;
  const faces_arg &fa;
  const tsr_field *f; /* the shape of every job's fields */
  int narr;           /* arrays a job stages */
  int njob;
  cudaStream_t st;
  tsr_block_shape *shape;
  cudaError_t *err;
  template <int M, int NC, int DIM, bool SRC>
  void one() const {
    auto kernel = block_kernel<M, NC, DIM, SRC, true, T>;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;
    cudaLaunchConfig_t cfg = {};
    cfg.stream = st;
    cfg.attrs = &attr;
    /* the first cluster size whose copies fit and which the GPU can hold (its SMs' shared
     * memory); none: one block, in place */
    const size_t optin = smem_optin();
    int G = 1;
    size_t bytes = 0;
    bool staged = false;
    int gs[5];
    const bool clusters = clusters_here();
    cfg.numAttrs = clusters ? 1 : 0;
    const int ng = clusters_for(a.nl, clusters, gs);
    int resident = 0;
    for (int i = 0; i < ng; ++i) {
      const int g = gs[i];
      const size_t b = copy_bytes(f, narr, g);
      if (!b || b > optin) continue;
      if (b > 48 * 1024 &&
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)b) !=
              cudaSuccess)
        continue;
      if (g > 8 &&
          cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
              cudaSuccess)
        continue;
      cfg.gridDim = dim3((unsigned)g);
      cfg.blockDim = dim3((unsigned)kThreads<NC>);
      cfg.dynamicSmemBytes = b;
      attr.val.clusterDim.x = (unsigned)g;
      attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
      int fits = 0, sms = 0, dev = 0;
      const cudaError_t e =
          clusters ? cudaOccupancyMaxActiveClusters(&fits, kernel, &cfg)
                   : cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fits, kernel, kThreads<NC>, b);
      if (e == cudaSuccess && !clusters && cudaGetDevice(&dev) == cudaSuccess &&
          cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess)
        fits *= sms; /* blocks the GPU holds at once, as clusters of one */
      if (e == cudaSuccess && fits > 0) {
        G = g;
        bytes = b;
        resident = fits;
        staged = true;
        break;
      }
      cudaGetLastError();
    }
    cudaGetLastError();
    if (staged) {
      const int nl = a.nl;
      a.cs = (ptrdiff_t)copy_layers(G, nl, a.box.lo[a.last] - a.gbox.lo[a.last],
                                    a.gbox.hi[a.last] - a.box.hi[a.last]) * a.sl;
    }
    /* threads for a block's cells, in whole warps */
    const long cells = (long)a.nx * a.rows_per_layer * ((a.nl + G - 1) / G);
    const int threads = cells < kThreads<NC> ? (int)((cells + 31) / 32 * 32) : kThreads<NC>;
    cfg.gridDim = dim3((unsigned)(G * njob));
    cfg.blockDim = dim3((unsigned)threads);
    cfg.dynamicSmemBytes = bytes;
    attr.val.clusterDim.x = (unsigned)G;
    attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
    a.bx = a.nx < threads ? a.nx : threads;
    a.by = threads / a.bx;
    if (shape) *shape = tsr_block_shape{staged ? G : 0, resident, threads};
    *err = cudaLaunchKernelEx(&cfg, staged ? kernel : block_kernel<M, NC, DIM, SRC, false, T>,
                              a, fa);
  }
  template <int M, int NC>
  void go() const {
    if (dim == 3) src ? one<M, NC, 3, true>() : one<M, NC, 3, false>();
    else src ? one<M, NC, 2, true>() : one<M, NC, 2, false>();
  }
};

/* The arrays the steps of sc write (a slot no stage names is left alone) into use[], and
 * how many. */
int arrays_of(const tsr_block_scheme *sc, tsr_field *const slot[3], tsr_field *acc,
              tsr_field *use[kArrays]) {
  use[0] = slot[0];
  use[1] = use[2] = use[3] = nullptr;
  for (int k = 0; k < sc->nstage; ++k) {
    use[sc->in[k]] = slot[sc->in[k]];
    use[sc->out[k]] = slot[sc->out[k]];
    if (tsr_stage_uses_acc(sc->kind[k])) use[3] = acc;
  }
  use[sc->result] = slot[sc->result];
  int n = 0;
  for (int k = 0; k < kArrays; ++k) n += use[k] != nullptr;
  return n;
}

bool shaped_like(const tsr_field *f, const tsr_field *g) {
  return f->mem == TSR_MEM_DEVICE && tsr_box_equal(&f->gbox, &g->gbox) &&
         tsr_box_equal(&f->box, &g->box) && f->sy == g->sy && f->sz == g->sz &&
         f->scomp == g->scomp && f->ncomp == g->ncomp && f->prec == g->prec;
}

/* Jobs jobs[0 .. njob) (at most kJobs) in one launch. */
template <typename T>
tsr_err steps_typed(const tsr_stage_desc *s, const tsr_block_scheme *sc, int njob,
                    const tsr_block_job *jobs, const faces_arg &fa, cudaStream_t stream,
                    tsr_block_shape *shape) {
  const tsr_field *f = jobs[0].slot[0];
  const int dim = s->coef.dim;
  block_args<T> a;
  int narr = 0;
  for (int j = 0; j < njob; ++j) {
    tsr_field *use[kArrays];
    narr = arrays_of(sc, jobs[j].slot, jobs[j].acc, use);
    for (int k = 0; k < kArrays; ++k)
      a.job[j].arr[k] = use[k] ? static_cast<T *>(use[k]->data) : nullptr;
    a.job[j].src = jobs[j].src ? static_cast<const T *>(jobs[j].src->data) : nullptr;
    a.job[j].n = (long long)jobs[j].n;
  }
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
  a.cs = f->scomp;
  a.last = dim == 3 ? 2 : 1;
  a.sl = dim == 3 ? f->sz : f->sy;
  a.nx = tsr_box_len(&f->box, 0);
  a.ny = tsr_box_len(&f->box, 1);
  a.nl = tsr_box_len(&f->box, a.last);
  a.rows_per_layer = dim == 3 ? a.ny : 1;
  cudaError_t err = cudaSuccess;
  tsr_dispatch_model(s->model, launch<T>{dim, jobs[0].src != nullptr, a, fa, f, narr, njob,
                                         stream, shape, &err});
  TSR_CUDA(err);
  TSR_CUDA_LAUNCHED("block steps kernel");
  return TSR_OK;
}

/* A job's fields against the first job's slot 0 and the scheme (tsr_block_steps_cuda's
 * errors). */
tsr_err check_job(const tsr_stage_desc *s, const tsr_block_scheme *sc, const tsr_block_job *jb,
                  const tsr_field *f, const tsr_block_job *first) {
  TSR_CHECK(jb->slot[0] && shaped_like(jb->slot[0], f), TSR_ERR_STATE,
            "tsr_block_steps_cuda: every job's slot 0 must have the first's shape");
  int needs_acc = 0;
  for (int k = 0; k < sc->nstage; ++k) {
    const int in = sc->in[k], out = sc->out[k];
    TSR_CHECK(in >= 0 && in < 3 && out >= 0 && out < 3 && in != out && jb->slot[in] &&
                  jb->slot[out] && shaped_like(jb->slot[in], f) && shaped_like(jb->slot[out], f) &&
                  sc->kind[k] >= TSR_STAGE_EULER && sc->kind[k] <= TSR_STAGE_RK4_4,
              TSR_ERR_STATE, "tsr_block_steps_cuda: stage %d (kind %d) reads slot %d and writes "
              "slot %d: distinct slots of slot 0's shape expected", k, sc->kind[k], in, out);
    needs_acc |= tsr_stage_uses_acc(sc->kind[k]);
  }
  TSR_CHECK(!jb->slot[sc->result] || shaped_like(jb->slot[sc->result], f), TSR_ERR_STATE,
            "tsr_block_steps_cuda: the result slot differs from slot 0");
  TSR_CHECK(!needs_acc || (jb->acc && shaped_like(jb->acc, f)), TSR_ERR_STATE,
            "tsr_block_steps_cuda: RK4 stages need an accumulator of slot 0's shape");
  TSR_CHECK(!jb->src == !first->src && (!jb->src || shaped_like(jb->src, f)), TSR_ERR_STATE,
            "tsr_block_steps_cuda: a source in every job or in none, of slot 0's shape and "
            "precision");
  TSR_CHECK(jb->n >= 0, TSR_ERR_STATE, "tsr_block_steps_cuda: %lld steps", (long long)jb->n);
  (void)s;
  return TSR_OK;
}

}  // namespace

extern "C" int tsr_block_clusters(void) { return clusters_here(); }

extern "C" int tsr_block_steps_staged(const tsr_block_scheme *sc, tsr_field *const slot[3],
                                      tsr_field *acc) {
  tsr_field *use[kArrays];
  const int narr = arrays_of(sc, slot, acc, use);
  const size_t optin = smem_optin();
  const int nl = tsr_box_len(&slot[0]->box, slot[0]->dim == 3 ? 2 : 1);
  int gs[5];
  const int ng = clusters_for(nl, clusters_here(), gs);
  for (int i = 0; i < ng; ++i) {
    const size_t b = copy_bytes(slot[0], narr, gs[i]);
    if (b && b <= optin) return 1;
  }
  return 0;
}

extern "C" tsr_err tsr_block_steps_cuda_batch(const tsr_stage_desc *s, const tsr_block_scheme *sc,
                                              int njob, const tsr_block_job *jobs, int nface,
                                              const tsr_bc_face *const *faces,
                                              const double *const *vals, cudaStream_t stream,
                                              tsr_block_shape *shape) {
  if (shape) *shape = tsr_block_shape{0, 0, 0};
  if (njob <= 0) return TSR_OK;
  const tsr_field *f = jobs[0].slot[0];
  TSR_CHECK(f && f->mem == TSR_MEM_DEVICE && f->ghost >= 1, TSR_ERR_STATE,
            "tsr_block_steps_cuda: slot 0 must be a device field with ghost cells");
  TSR_CHECK(s->model >= 0 && s->model < TSR_MODEL_COUNT &&
                (tsr_models[s->model].methods & TSR_METHODS_EXPLICIT) &&
                (s->coef.dim == 2 || s->coef.dim == 3) && f->ncomp <= 2 &&
                f->ncomp == tsr_models[s->model].ncomp && f->dim == s->coef.dim,
            TSR_ERR_STATE, "tsr_block_steps_cuda: model %d in %dD has no explicit stage here",
            s->model, s->coef.dim);
  TSR_CHECK(sc->nstage >= 1 && sc->nstage <= 4 && sc->result >= 1 && sc->result <= 2,
            TSR_ERR_STATE, "tsr_block_steps_cuda: a scheme of %d stages, result slot %d",
            sc->nstage, sc->result);
  for (int j = 0; j < njob; ++j) TSR_CALL(check_job(s, sc, &jobs[j], f, &jobs[0]));
  if (tsr_box_empty(&f->box)) return TSR_OK;
  faces_arg fa;
  unsigned long long total;
  TSR_CALL(faces_of(nface, faces, vals, f, &fa, &total));
  for (int j0 = 0; j0 < njob; j0 += kJobs) {
    const int nj = njob - j0 < kJobs ? njob - j0 : kJobs;
    if (f->prec == TSR_PREC_SINGLE)
      TSR_CALL(steps_typed<float>(s, sc, nj, jobs + j0, fa, stream, shape));
    else TSR_CALL(steps_typed<double>(s, sc, nj, jobs + j0, fa, stream, shape));
  }
  return TSR_OK;
}

extern "C" tsr_err tsr_block_steps_cuda(const tsr_stage_desc *s, const tsr_block_scheme *sc,
                                        tsr_field *const slot[3], tsr_field *acc,
                                        const tsr_field *src, int nface,
                                        const tsr_bc_face *const *faces,
                                        const double *const *vals, int64_t n,
                                        cudaStream_t stream) {
  if (n <= 0) return TSR_OK;
  tsr_block_job jb = {{slot[0], slot[1], slot[2]}, acc, src, n};
  return tsr_block_steps_cuda_batch(s, sc, 1, &jb, nface, faces, vals, stream, nullptr);
}
