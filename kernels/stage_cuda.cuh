/* tsr_stage_cuda: the explicit stage of kernels/stage_host.c on the GPU.
 *
 * Bitwise equality with the host (DESIGN.md principle 2) comes from calling the same per-cell
 * functions (tsr_model_rhs, tsr_stage_update) on the same values in the same order, with
 * contraction off (-fmad=false). The only difference is where the stencil's values come from:
 * each thread gathers them into a small register array laid out like a 3x3(x3) field (strides
 * 1, 3, 9) and hands tsr_model_rhs a pointer to its centre, with those strides as compile-time
 * constants so that the array never leaves registers.
 *
 * Memory traffic ("2.5D blocking"): a block covers a tile of the x-y plane (x fastest across
 * threads, so every access is coalesced) and each thread marches along z (along y in 2D)
 * through a chunk of the region. The centre column travels in a register ring (k-1, k, k+1
 * and kPrefetch more loads already issued), so per cell a thread loads one new centre, from
 * DRAM, and the in-plane neighbours, which the neighbouring threads of the block loaded as
 * their centres a few steps earlier and which therefore hit L1 (tile edges: L2). Each cell of
 * `in` is read from DRAM about once, out written once. The grid orders blocks x, y, then z
 * chunk, so the blocks resident together march through the same few planes and the halo rows
 * they share stay in L2.
 *
 * Launch shape (tsr_stage_cuda_set_tuning): 3D 32 x 4 threads marching 4 cells, 2D 64 threads
 * marching 4 rows (8 in fp32; 2 and 4 on an H100: device_march), each thread taking two
 * columns 32 or 64 cells apart (kCols).
 * Measured on an H200 (2026-11-22, bench/README.md): two columns beat one by 5-14% (fp32
 * most); four columns, deeper prefetch (4, 8), warp shuffles for the x neighbours and longer
 * marches were no better. Nsight Compute: DRAM bytes are at the minimum, but L2 throughput is
 * 84-96% busy, with 2.1-2.75 L2 bytes per DRAM byte (neighbour rows and march overlap re-read
 * through L2, L1 hit rate 46-48%). Large 3D regions therefore go through shared-memory tiles
 * (tile_kernel below), which bring that to 1.8 L2 bytes per DRAM byte; yet L2 stays 82-88%
 * busy and the time moved little (512^3 fp64 0.672 -> 0.655 ms, fp32 0.472 -> 0.411 ms, H200,
 * 2026-11-23): the bytes through L2 were not what bound it. What does (Nsight Compute broken
 * down by L2 sub-unit, bench/README.md session 5): the link between the H200's two L2 halves,
 * 88% busy even for a plain copy kernel and 95-96% for the 2D stage; in 3D fp64 too few loads
 * in flight (tile_kernel's register rings hold it to 3 blocks an SM); the async tiles
 * (atile_kernel: planes copied into shared memory with cp.async, tile3 = 2) reached 0.639 ms
 * against 0.664 in a sweep but not as a default (kAsyncAuto).
 * Registers per thread (nvcc 13, sm_90, -Xptxas -v) with one column: heat, advection-
 * diffusion, Allen-Cahn 32-40, wave and Gray-Scott 40-62, no spills or stack; with the two
 * columns of today a few SSP/RK instantiations of advection-diffusion, wave and Gray-Scott
 * spill 4-32 bytes; tiles use 64-88 (one component) and 98-144 (two), async tiles 32-56, no
 * spills.
 *
 * The per-thread body is __host__ __device__ so that a CPU emulation of the launch can check
 * the indexing without a GPU (tests/unit/emulate_stage.cu includes this file).
 *
 * This file holds the kernels, their launches and checks; kernels/stage_f32_cuda.cu and
 * stage_f64_cuda.cu compile it once per storage type (kernels/stage_parts.h), so that nvcc
 * compiles the two in parallel, and kernels/stage_cuda.cu is the entry. */
#include <cuda_pipeline.h>
#include <cuda_runtime.h>
#include <string.h>

#include <atomic>
#include <nccl.h> /* C++ overloads inside: keep it out of the extern "C" block below */

extern "C" {
#include "kernels/cuda_util.h"
}
#include "kernels/model_dispatch_cuda.cuh"
#include "kernels/stage_parts.h"

namespace {

/* Centre loads in flight beyond the k+1 the current cell needs: independent DRAM requests per
 * thread, on top of occupancy, to cover memory latency. */
#ifndef TSR_STAGE_PREFETCH
#define TSR_STAGE_PREFETCH 2
#endif
constexpr int kPrefetch = TSR_STAGE_PREFETCH;
constexpr int kRing = 3 + kPrefetch;

/* T: the fields' storage type (double or float); arithmetic is double either way. */
template <typename T>
struct stage_args {
  const T *__restrict__ in;
  const T *__restrict__ base;
  T *acc;
  const T *__restrict__ src;
  T *out;
  tsr_cell_coef coef;
  double dt;
  ptrdiff_t origin;      /* offset of the region's first cell (component 0) */
  ptrdiff_t sy, sz, sc;  /* field strides */
  int nx, ny, nz;        /* region extent */
  int chunk;             /* cells each thread marches along the last axis */
  int thin;              /* 3D regions a few cells thin in x (x faces of the shell): lanes
                            along y, so that a warp is not one busy lane and 31 idle ones */
};

/* __ldg on the device (read-only path, cached in L1); a plain load where the body is compiled
 * for the host (a CPU emulation of the launch checks indexing without a GPU). */
template <typename T>
__host__ __device__ __forceinline__ double ldg(const T *p) {
#ifdef __CUDA_ARCH__
  return (double)__ldg(p);
#else
  return (double)*p;
#endif
}

/* The start of a march: ring[q][c][r] = component c of the centre of column q (offset o[q] on
 * plane m0) on plane m0 - 1 + r, clamped to m1, the last plane the chunk's cells read, so
 * always inside the field (values past it go unused). The register kernel and the tiles share
 * it. */
template <int NQ, int NC, int NR, typename T>
__host__ __device__ __forceinline__ void ring_fill(double (&ring)[NQ][NC][NR],
                                                   const T *__restrict__ in,
                                                   const ptrdiff_t (&o)[NQ], ptrdiff_t sc,
                                                   ptrdiff_t ms, int m0, int m1) {
#pragma unroll
  for (int q = 0; q < NQ; ++q)
#pragma unroll
    for (int c = 0; c < NC; ++c)
#pragma unroll
      for (int r = 0; r < NR; ++r)
        ring[q][c][r] = ldg(in + o[q] + c * sc + ((m0 - 1 + r < m1 ? m0 - 1 + r : m1) - m0) * ms);
}

/* The update of one cell at offset o (component 0) from its right-hand side r and its value
 * ring[c][1] (the centre of a register ring), and the store: the same for both kernels here
 * and the same order of operations as stage_host.c's row(). */
template <int NC, int KIND, bool SRC, typename T, int R>
__host__ __device__ __forceinline__ void store_cell(const stage_args<T> &a, ptrdiff_t o,
                                                    const double (&ring)[NC][R], const double *r) {
#pragma unroll
  for (int c = 0; c < NC; ++c) {
    const ptrdiff_t ac = o + c * a.sc;
    const double rc = SRC ? r[c] + ldg(a.src + ac) : r[c];
    const double b = tsr_stage_uses_base(KIND) ? ldg(a.base + ac) : 0.0;
    double av = tsr_stage_uses_acc(KIND) ? (double)a.acc[ac] : 0.0;
    a.out[ac] = (T)tsr_stage_update(KIND, a.dt, b, ring[c][1], rc, &av);
    if (tsr_stage_uses_acc(KIND) && KIND != TSR_STAGE_RK4_4) a.acc[ac] = (T)av;
  }
}

/* Columns along x that one thread updates, bx apart (so each of its loads is still coalesced
 * across the warp): independent loads in flight per thread, which is what the stage lacks
 * (it waits on memory latency, not bandwidth; bench/README.md). */
#ifndef TSR_STAGE_COLS
#define TSR_STAGE_COLS 2
#endif
constexpr int kCols = TSR_STAGE_COLS;

/* The cells of thread (t, b) of a launch of shape (bdim, grid): columns i, i + bdim.x, ...
 * (kCols of them) at row j marching z from m0 in 3D, columns i, ... marching y from m0 in 2D.
 * 0 when the thread has no cell. */
template <int DIM, typename T>
__host__ __device__ __forceinline__ bool thread_cells(const stage_args<T> &a, uint3 t, uint3 b,
                                                      dim3 bdim, int *i, int *j, int *m0) {
  if (DIM == 3 && a.thin) { /* columns j, j + bdim.x, ... along y instead */
    *i = (int)(b.y * bdim.y + t.y);
    *j = (int)(b.x * bdim.x * kCols + t.x);
    *m0 = (int)b.z * a.chunk;
    return *i < a.nx && *j < a.ny && *m0 < a.nz;
  }
  *i = (int)(b.x * bdim.x * kCols + t.x);
  if constexpr (DIM == 3) {
    *j = (int)(b.y * bdim.y + t.y);
    *m0 = (int)b.z * a.chunk;
    return *i < a.nx && *j < a.ny && *m0 < a.nz;
  } else {
    *j = 0;
    *m0 = (int)(b.y * bdim.y + t.y) * a.chunk;
    return *i < a.nx && *m0 < a.ny;
  }
}

/* One thread's work: kCols columns (i + q * di, j + q * dj) over marching indices m0 .. m0 +
 * chunk (z in 3D, y in 2D), with the same per-cell code as stage_host.c's row(). Columns past
 * the region's end read a column inside it (always valid) and store nothing. */
template <int M, int NC, int KIND, int DIM, bool SRC, typename T>
__host__ __device__ __forceinline__ void stage_column(const stage_args<T> &a, int i, int di, int j,
                                                      int dj, int m0) {
  const int nm = DIM == 3 ? a.nz : a.ny;
  const ptrdiff_t ms = DIM == 3 ? a.sz : a.sy; /* stride of the marching axis */
  const int m1 = m0 + a.chunk < nm ? m0 + a.chunk : nm;

  /* strides of the register stencil; constants, so every index into w folds */
  constexpr ptrdiff_t wy = 3, wz = 9, wc = DIM == 3 ? 27 : 9, wo = DIM == 3 ? 13 : 4;
  constexpr ptrdiff_t wm = DIM == 3 ? wz : wy; /* the marching axis in w */
  tsr_cell_coef kc = a.coef;
  kc.dim = DIM;
  kc.sy = wy;
  kc.sz = wz;
  kc.scomp = wc;
  const ptrdiff_t sy = a.sy, sc = a.sc;
  const T *__restrict__ in = a.in;

  ptrdiff_t o[kCols]; /* offset of each column's current cell */
  bool live[kCols];
#pragma unroll
  for (int q = 0; q < kCols; ++q) {
    const int ci = i + q * di, cj = j + q * dj;
    live[q] = ci < a.nx && (DIM == 2 || cj < a.ny);
    o[q] = a.origin + (ci < a.nx ? ci : a.nx - 1) +
           (DIM == 3 ? (ptrdiff_t)(cj < a.ny ? cj : a.ny - 1) * sy : 0) + (ptrdiff_t)m0 * ms;
  }

  /* ring[q][c][r] = centre of column q, component c at marching index m - 1 + r */
  double ring[kCols][NC][kRing];
  ring_fill(ring, in, o, sc, ms, m0, m1);

  /* not unrolled: the ring already keeps loads in flight, and unrolling only adds registers
   * (less occupancy) */
#pragma unroll 1
  for (int m = m0; m < m1; ++m) {
    /* the centre kPrefetch + 2 ahead; near the chunk's end clamped to m1, the last centre
     * any of its cells reads (so always inside the field; those values go unused) */
    const ptrdiff_t ahead = (ptrdiff_t)((m + kPrefetch + 2 < m1 ? m + kPrefetch + 2 : m1) - m) * ms;
    double next[kCols][NC];
#pragma unroll
    for (int q = 0; q < kCols; ++q)
#pragma unroll
      for (int c = 0; c < NC; ++c) next[q][c] = ldg(in + o[q] + c * sc + ahead);

#pragma unroll
    for (int q = 0; q < kCols; ++q) {
      /* slots no stencil reads stay unset; loads nothing uses are dropped by the compiler */
      double w[NC * wc];
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        const T *p = in + o[q] + c * sc;
        double *wp = w + c * wc + wo;
        wp[0] = ring[q][c][1];
        wp[-wm] = ring[q][c][0];
        wp[wm] = ring[q][c][2];
        wp[-1] = ldg(p - 1);
        wp[1] = ldg(p + 1);
        if constexpr (DIM == 3) {
          wp[-wy] = ldg(p - sy);
          wp[wy] = ldg(p + sy);
        }
      }
      double r[TSR_MAX_COMP] = {0};
      tsr_model_rhs(M, w + wo, &kc, r);
      if (live[q]) store_cell<NC, KIND, SRC>(a, o[q], ring[q], r);
    }
#pragma unroll
    for (int q = 0; q < kCols; ++q) {
#pragma unroll
      for (int c = 0; c < NC; ++c) {
#pragma unroll
        for (int r = 0; r + 1 < kRing; ++r) ring[q][c][r] = ring[q][c][r + 1];
        ring[q][c][kRing - 1] = next[q][c];
      }
      o[q] += ms;
    }
  }
}

template <int M, int NC, int KIND, int DIM, bool SRC, typename T>
__global__ void __launch_bounds__(256) stage_kernel(const stage_args<T> a) {
  int i, j, m0;
  if (!thread_cells<DIM>(a, threadIdx, blockIdx, blockDim, &i, &j, &m0)) return;
  if (DIM == 3 && a.thin) stage_column<M, NC, KIND, DIM, SRC, T>(a, i, 0, j, (int)blockDim.x, m0);
  else stage_column<M, NC, KIND, DIM, SRC, T>(a, i, (int)blockDim.x, j, 0, m0);
}

/* ---- batches: the same stage on several fields of one geometry in one launch -----------
 * (tsr_stage_cuda_batch). The grid is one field's grid repeated along z, zblocks per field, so
 * a block computes what the same block of a single launch on its field computes, with the
 * same per-thread body: the bits are the single launches'. */
constexpr int kBatch = TSR_STAGE_BATCH_MAX;

template <typename T>
struct batch_ptrs {
  const T *in[kBatch];
  const T *base[kBatch];
  T *acc[kBatch];
  const T *src[kBatch];
  T *out[kBatch];
  int zblocks; /* grid.z of one field's launch */
};

template <int M, int NC, int KIND, int DIM, bool SRC, typename T>
__host__ __device__ __forceinline__ void batch_thread(const stage_args<T> &a0,
                                                      const batch_ptrs<T> &p, uint3 t, uint3 b,
                                                      dim3 bdim) {
  const int f = (int)b.z / p.zblocks;
  b.z -= (unsigned)(f * p.zblocks);
  stage_args<T> a = a0;
  a.in = p.in[f];
  a.base = p.base[f];
  a.acc = p.acc[f];
  a.src = p.src[f];
  a.out = p.out[f];
  int i, j, m0;
  if (!thread_cells<DIM>(a, t, b, bdim, &i, &j, &m0)) return;
  if (DIM == 3 && a.thin) stage_column<M, NC, KIND, DIM, SRC, T>(a, i, 0, j, (int)bdim.x, m0);
  else stage_column<M, NC, KIND, DIM, SRC, T>(a, i, (int)bdim.x, j, 0, m0);
}

/* __grid_constant__: the pointer tables are read where the launch put them (the constant
 * bank), indexed by the block's field, not copied into each thread's local memory. */
template <int M, int NC, int KIND, int DIM, bool SRC, typename T>
__global__ void __launch_bounds__(256)
    batch_kernel(const stage_args<T> a, const __grid_constant__ batch_ptrs<T> p) {
  batch_thread<M, NC, KIND, DIM, SRC, T>(a, p, threadIdx, blockIdx, blockDim);
}

/* 3D tiles through shared memory: tile_kernel and atile_kernel */
#include "kernels/stage_tiles_cuda.cuh"

/* Launch shape: tsr_stage_cuda_tuning_now (kernels/stage_parts.h), process-wide. */

struct shape {
  dim3 grid, block;
  int chunk;
  int thin;
  int tile; /* 1: tile_kernel; 2: atile_kernel where one component, tile_kernel otherwise */
};

/* Planes each tile marches by default: long enough that the two planes of z overlap per block
 * cost little, short enough that a 512^3 region still makes 32 blocks per SM. */
constexpr int kTileChunk = 16;
/* Whether tile3 = 0 takes the async tiles (fp64, one component) where tiles fit, marching
 * kAsyncChunk planes. Off: on an H200 at 512^3 they ran 0.639 ms marching 8 planes in
 * gpu_stencil's sweep but 0.680 as the default of a fresh case, and 0.707 with the largest
 * shared-memory carveout requested, against 0.655-0.663 for tile_kernel as the default: their
 * speed depends on the L1 / shared-memory split the driver picks (bench/README.md, session 5).
 * tile3 = 2 takes them. */
constexpr bool kAsyncAuto = false;
constexpr int kAsyncChunk = 8;

/* How far threads march by default, per device: 2D rows in fp64 and fp32, and 3D tile planes.
 * gpu_stencil's sweeps (bench/README.md) put the best march at 4 / 8 / 8-16 on an H200
 * (session 5) but 2 / 4 / 4 on an H100 80GB HBM3 (session 6: 2D fp64 0.854 -> 0.954 of copy,
 * 2D fp32 0.821 -> 0.867, 3D tiles fp64 0.870 -> 0.817 ms, fp32 0.537 -> 0.483 ms). Every H100
 * takes the H100's; any other GPU the H200's. The march changes which thread computes a
 * cell, never how, so results are the same bits on either. */
struct march {
  int rows_fp64, rows_fp32, planes;
};
constexpr march kMarchH200 = {4, 8, kTileChunk};
constexpr march kMarchH100 = {2, 4, 4};

/* The current device's march, looked up once per device (cudaGetDeviceProperties is slow);
 * the H200's where the device cannot be asked (the host emulation of the kernels). */
const march &device_march() {
  static std::atomic<int> kind[64]; /* 0: not looked up, 1: H200's, 2: H100's */
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) {
    cudaGetLastError();
    return kMarchH200;
  }
  int k = kind[dev].load(std::memory_order_relaxed);
  if (!k) {
    cudaDeviceProp p;
    k = 1;
    if (cudaGetDeviceProperties(&p, dev) == cudaSuccess) k = strstr(p.name, "H100") ? 2 : 1;
    else cudaGetLastError();
    kind[dev].store(k, std::memory_order_relaxed);
  }
  return k == 2 ? kMarchH100 : kMarchH200;
}

/* The current device's SM count, looked up once per device; 0 where the device cannot be asked
 * (the host emulation of the kernels). */
int device_sms() {
  static std::atomic<int> sms[64]; /* 0: not looked up, -1: not known */
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) {
    cudaGetLastError();
    return 0;
  }
  int n = sms[dev].load(std::memory_order_relaxed);
  if (!n) {
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n < 1) {
      cudaGetLastError();
      n = -1;
    }
    sms[dev].store(n, std::memory_order_relaxed);
  }
  return n > 0 ? n : 0;
}

/* A 3D region at most this many cells across in x and at least twice as long in y runs with
 * its lanes along y (measured on nvidia-h200-x2: the x face of a 512^3 shell took 49.9 us with
 * lanes along x, one busy lane per warp, against 5.3 us for a z face; bench/README.md). */
constexpr int kThinX = 8;

/* esize: bytes per value (8 or 4); tiles false: the register kernel in 3D too (batches). */
shape pick_shape(int dim, int nx, int ny, int nz, ptrdiff_t sy, int esize, bool tiles = true) {
  const tsr_stage_cuda_tuning &t = tsr_stage_cuda_tuning_now;
  int bx, by, chunk;
  if (dim == 3 && nx <= kThinX && ny >= 2 * nx) {
    shape s;
    s.thin = 1;
    s.tile = 0;
    /* one cell per column: a face has too few columns to fill the GPU with longer marches */
    s.chunk = t.chunk3 > 0 ? t.chunk3 : 1;
    int bxx = 1; /* threads along x: nx rounded up to a power of two, at most 4 */
    while (bxx < nx && bxx < 4) bxx *= 2;
    const int bxy = 128 / bxx; /* along y, a multiple of 32 */
    s.block = dim3((unsigned)bxy, (unsigned)bxx, 1);
    s.grid = dim3((unsigned)((ny + bxy * kCols - 1) / (bxy * kCols)),
                  (unsigned)((nx + bxx - 1) / bxx), (unsigned)((nz + s.chunk - 1) / s.chunk));
    return s;
  }
  /* tiles where a tile is at least half full in x and y; tile3 < 0 turns them off, > 0 on
   * for every 3D region the thin path does not take */
  if (dim == 3 && tiles && t.tile3 >= 0 && (t.tile3 > 0 || (2 * nx >= kTX && 2 * ny >= kTY))) {
    shape s;
    s.thin = 0;
    /* async tiles keep in-plane offsets in 32 bits */
    const bool async_fits = (double)(ny + 1) * (double)sy + nx + 1 < 2147483647.0;
    s.tile = async_fits && (t.tile3 == 2 || (t.tile3 == 0 && kAsyncAuto && esize == 8)) ? 2 : 1;
    s.chunk = t.chunkt3 > 0 ? t.chunkt3 : s.tile == 2 ? kAsyncChunk : device_march().planes;
    s.block = dim3(32, kTBY, 1);
    const long tiles_xy = (long)((nx + kTX - 1) / kTX) * ((ny + kTY - 1) / kTY);
    /* a small region marches shorter chunks, so that its blocks fill the GPU: 64^3 made 16
     * blocks of 16 planes for 132 SMs on an H200 and took 14 us a stage, where an H100's
     * march of 4 planes (64 blocks) took about 8 (session 12); with this rule a 64^3
     * SSP-RK3 step took 18.7 us on an H200 against 59.8 (bench/README.md, Parareal on one
     * GPU). The march never changes a value. */
    for (long want = 2L * device_sms(); t.chunkt3 <= 0 && s.chunk > 1 &&
                                        tiles_xy * ((nz + s.chunk - 1) / s.chunk) < want;)
      s.chunk /= 2;
    s.grid = dim3((unsigned)((nx + kTX - 1) / kTX), (unsigned)((ny + kTY - 1) / kTY),
                  (unsigned)((nz + s.chunk - 1) / s.chunk));
    return s;
  }
  if (dim == 3) {
    bx = t.bx3 > 0 ? t.bx3 : 32;
    by = t.by3 > 0 ? t.by3 : 4;
    chunk = t.chunk3 > 0 ? t.chunk3 : 4;
  } else {
    bx = t.bx2 > 0 ? t.bx2 : 64;
    by = 1;
    /* fp32 rows are half the bytes: twice the march for the same bytes in flight (20480^2 on
     * an H200: 1.19 -> 1.06 ms a step) */
    const march &mr = device_march();
    chunk = t.chunk2 > 0 ? t.chunk2 : (esize == 4 ? mr.rows_fp32 : mr.rows_fp64);
  }
  /* thin regions (shell slabs): fewer idle lanes, same block size */
  const int threads = bx * by;
  while (bx > 32 && bx / 2 * kCols >= nx) bx /= 2;
  by = threads / bx;
  if (dim == 3) {
    while (by > 1 && by / 2 >= ny) by /= 2;
  }
  shape s;
  s.thin = 0;
  s.tile = 0;
  s.block = dim3((unsigned)bx, (unsigned)by, 1);
  s.chunk = chunk;
  unsigned gx = (unsigned)((nx + bx * kCols - 1) / (bx * kCols));
  if (dim == 3) {
    s.grid = dim3(gx, (unsigned)((ny + by - 1) / by), (unsigned)((nz + chunk - 1) / chunk));
  } else {
    int chunks = (ny + chunk - 1) / chunk;
    s.grid = dim3(gx, (unsigned)((chunks + by - 1) / by), 1);
  }
  return s;
}

/* The one map from a stage's run-time model and kind to the kernels' template arguments: calls
 * l.template go<M, NC, KIND>() (NC: the model's components). */
template <int M, int NC, typename L>
void dispatch_kind(int kind, const L &l) {
  switch (kind) {
  case TSR_STAGE_EULER: l.template go<M, NC, TSR_STAGE_EULER>(); break;
  case TSR_STAGE_SSP2_2: l.template go<M, NC, TSR_STAGE_SSP2_2>(); break;
  case TSR_STAGE_SSP3_2: l.template go<M, NC, TSR_STAGE_SSP3_2>(); break;
  case TSR_STAGE_SSP3_3: l.template go<M, NC, TSR_STAGE_SSP3_3>(); break;
  case TSR_STAGE_RK4_1: l.template go<M, NC, TSR_STAGE_RK4_1>(); break;
  case TSR_STAGE_RK4_2: l.template go<M, NC, TSR_STAGE_RK4_2>(); break;
  case TSR_STAGE_RK4_3: l.template go<M, NC, TSR_STAGE_RK4_3>(); break;
  case TSR_STAGE_RK4_4: l.template go<M, NC, TSR_STAGE_RK4_4>(); break;
  default: break;
  }
}

/* A model's kinds: dispatch_kind under tsr_dispatch_model (kernels/model_dispatch_cuda.cuh). */
template <typename L>
struct kinds_of {
  int kind;
  const L &l;
  template <int M, int NC>
  void go() const { dispatch_kind<M, NC>(kind, l); }
};

template <typename L>
void dispatch(int model, int kind, const L &l) {
  tsr_dispatch_model(model, kinds_of<L>{kind, l});
}

/* One field's stage: the 3D tiles where pick_shape chose them, else the register kernel. */
template <typename T>
struct single_launch {
  int dim;
  bool src;
  const shape &sh;
  const stage_args<T> &a;
  cudaStream_t st;
  template <int M, int NC, int KIND>
  void go() const {
    if (NC == 1 && dim == 3 && sh.tile == 2) {
      if (src) atile_kernel<M, KIND, true, T><<<sh.grid, sh.block, 0, st>>>(a);
      else atile_kernel<M, KIND, false, T><<<sh.grid, sh.block, 0, st>>>(a);
    } else if (dim == 3 && sh.tile) {
      if (src) tile_kernel<M, NC, KIND, true, T><<<sh.grid, sh.block, 0, st>>>(a);
      else tile_kernel<M, NC, KIND, false, T><<<sh.grid, sh.block, 0, st>>>(a);
    } else if (dim == 3) {
      if (src) stage_kernel<M, NC, KIND, 3, true, T><<<sh.grid, sh.block, 0, st>>>(a);
      else stage_kernel<M, NC, KIND, 3, false, T><<<sh.grid, sh.block, 0, st>>>(a);
    } else {
      if (src) stage_kernel<M, NC, KIND, 2, true, T><<<sh.grid, sh.block, 0, st>>>(a);
      else stage_kernel<M, NC, KIND, 2, false, T><<<sh.grid, sh.block, 0, st>>>(a);
    }
  }
};

/* Up to kBatch fields' stage in one launch of the register kernel (grid.z: the fields' z blocks). */
template <typename T>
struct batch_launch {
  int dim;
  bool src;
  dim3 grid;
  const shape &sh;
  const stage_args<T> &a;
  const batch_ptrs<T> &p;
  cudaStream_t st;
  template <int M, int NC, int KIND>
  void go() const {
    if (dim == 3) {
      if (src) batch_kernel<M, NC, KIND, 3, true, T><<<grid, sh.block, 0, st>>>(a, p);
      else batch_kernel<M, NC, KIND, 3, false, T><<<grid, sh.block, 0, st>>>(a, p);
    } else {
      if (src) batch_kernel<M, NC, KIND, 2, true, T><<<grid, sh.block, 0, st>>>(a, p);
      else batch_kernel<M, NC, KIND, 2, false, T><<<grid, sh.block, 0, st>>>(a, p);
    }
  }
};

bool on_device(const tsr_field *f) { return !f || f->mem == TSR_MEM_DEVICE; }

/* Checks the call and fills the kernel arguments and launch shape. *empty: nothing to do. */
template <typename T>
tsr_err prepare(const tsr_stage_desc *s, const tsr_box *rg, const tsr_field *in,
                const tsr_field *base, tsr_field *acc, const tsr_field *src, tsr_field *out,
                stage_args<T> *a, shape *sh, bool *empty, bool tiles = true) {
  TSR_CHECK(on_device(in) && on_device(base) && on_device(acc) && on_device(src) &&
                on_device(out),
            TSR_ERR_STATE, "tsr_stage_cuda needs device fields (a host field was passed)");
  TSR_CHECK(in && out && in != out, TSR_ERR_STATE,
            "tsr_stage_cuda needs an input and a distinct output field");
  TSR_CHECK(s->model >= 0 && s->model < TSR_MODEL_COUNT && s->kind >= TSR_STAGE_EULER &&
                s->kind <= TSR_STAGE_RK4_4 && (s->coef.dim == 2 || s->coef.dim == 3),
            TSR_ERR_STATE, "tsr_stage_cuda: model %d, stage kind %d, dimension %d out of range",
            s->model, (int)s->kind, s->coef.dim);
  TSR_CHECK(tsr_models[s->model].methods & TSR_METHODS_EXPLICIT, TSR_ERR_STATE,
            "tsr_stage_cuda: model %s has no explicit stage (method: pinn only)",
            tsr_models[s->model].name);
  TSR_CHECK(base || !tsr_stage_uses_base(s->kind), TSR_ERR_STATE,
            "tsr_stage_cuda: stage kind %d reads a base field and none was given", (int)s->kind);
  TSR_CHECK(acc || !tsr_stage_uses_acc(s->kind), TSR_ERR_STATE,
            "tsr_stage_cuda: RK4 stage kind %d needs an accumulator field", (int)s->kind);
  const tsr_prec pr = in->prec;
  TSR_CHECK((!base || base->prec == pr) && (!acc || acc->prec == pr) &&
                (!src || src->prec == pr) && out->prec == pr,
            TSR_ERR_STATE, "tsr_stage_cuda: fields of different precisions");
  TSR_CHECK(in->ghost >= 1, TSR_ERR_STATE, "tsr_stage_cuda: the input field has no ghost cells");
  *empty = tsr_box_empty(rg);
  if (*empty) return TSR_OK;

  const int nx = tsr_box_len(rg, 0), ny = tsr_box_len(rg, 1), nz = tsr_box_len(rg, 2);
  a->in = static_cast<const T *>(in->data);
  a->base = base ? static_cast<const T *>(base->data) : nullptr;
  a->acc = acc ? static_cast<T *>(acc->data) : nullptr;
  a->src = src ? static_cast<const T *>(src->data) : nullptr;
  a->out = static_cast<T *>(out->data);
  a->coef = s->coef;
  a->coef.dt = s->dt; /* as tsr_stage_host sets it: models that integrate over the step read it */
  a->dt = s->dt;
  a->origin = tsr_field_at(in, 0, rg->lo[0], rg->lo[1], rg->lo[2]);
  a->sy = in->sy;
  a->sz = in->sz;
  a->sc = in->scomp;
  a->nx = nx;
  a->ny = ny;
  a->nz = nz;
  *sh = pick_shape(s->coef.dim, nx, ny, nz, in->sy, (int)sizeof(T), tiles);
  a->chunk = sh->chunk;
  a->thin = sh->thin;
  return TSR_OK;
}

template <typename T>
tsr_err stage_typed(const tsr_stage_desc *s, const tsr_box *rg, const tsr_field *in,
                    const tsr_field *base, tsr_field *acc, const tsr_field *src, tsr_field *out,
                    cudaStream_t stream) {
  stage_args<T> a;
  shape sh;
  bool empty;
  TSR_CALL(prepare<T>(s, rg, in, base, acc, src, out, &a, &sh, &empty));
  if (empty) return TSR_OK;
  dispatch(s->model, s->kind, single_launch<T>{s->coef.dim, src != nullptr, sh, a, stream});
  TSR_CUDA_LAUNCHED("stage kernel");
  return TSR_OK;
}

bool same_geometry(const tsr_field *a, const tsr_field *b) {
  return a && b && tsr_box_equal(&a->gbox, &b->gbox) && a->sy == b->sy && a->sz == b->sz &&
         a->scomp == b->scomp && a->ncomp == b->ncomp && a->prec == b->prec;
}

template <typename T>
tsr_err batch_typed(const tsr_stage_desc *s, const tsr_box *rg, int n, const tsr_field *const *in,
                    const tsr_field *const *base, tsr_field *const *acc,
                    const tsr_field *const *src, tsr_field *const *out, cudaStream_t stream) {
  for (int f0 = 0; f0 < n; f0 += kBatch) {
    const int nb = n - f0 < kBatch ? n - f0 : kBatch;
    stage_args<T> a;
    shape sh;
    bool empty = false;
    batch_ptrs<T> p;
    memset(&p, 0, sizeof p);
    for (int k = 0; k < nb; ++k) {
      const int f = f0 + k;
      const tsr_field *sf = src ? src[f] : nullptr;
      TSR_CHECK(same_geometry(in[f], in[0]) && (!sf == !(src && src[0])), TSR_ERR_STATE,
                "tsr_stage_cuda_batch: field %d differs from field 0 (box, ghosts, strides, "
                "precision or whether it has a source)", f);
      stage_args<T> af;
      TSR_CALL(prepare<T>(s, rg, in[f], base ? base[f] : nullptr, acc ? acc[f] : nullptr, sf,
                          out[f], &af, &sh, &empty, false));
      if (empty) return TSR_OK;
      if (k == 0) a = af;
      p.in[k] = af.in;
      p.base[k] = af.base;
      p.acc[k] = af.acc;
      p.src[k] = af.src;
      p.out[k] = af.out;
    }
    p.zblocks = (int)sh.grid.z;
    const unsigned long long gz = (unsigned long long)sh.grid.z * (unsigned long long)nb;
    TSR_CHECK(gz <= 65535ull, TSR_ERR_STATE,
              "tsr_stage_cuda_batch: %d fields of %u z blocks each are past the grid's 65535",
              nb, sh.grid.z);
    const dim3 grid(sh.grid.x, sh.grid.y, (unsigned)gz);
    dispatch(s->model, s->kind,
             batch_launch<T>{s->coef.dim, p.src[0] != nullptr, grid, sh, a, p, stream});
    TSR_CUDA_LAUNCHED("batched stage kernel");
  }
  return TSR_OK;
}

} // namespace
