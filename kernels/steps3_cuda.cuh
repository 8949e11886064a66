/* The 3D time-tile kernel (steps3_kernel), part of kernels/steps_cuda.cu: included by
 * kernels/steps_launch_cuda.cuh inside its anonymous namespace, after slot(). Not a header of
 * its own to include elsewhere.
 *
 * 2.5D blocking: a block of 32 x k3BY threads owns a tile of k3TX x k3TY columns of the x-y
 * plane (k3CX x k3CY columns a thread, 32 and k3BY apart, so that every load is coalesced and
 * a warp is one tile row) and streams them along z through a chunk of planes as a pipeline of
 * MS levels, as the 2D kernel streams rows: at each plane z it takes in plane z of level 0 and
 * computes level l's plane z - l from level l - 1's planes z - l - 1 .. z - l + 1. A thread
 * keeps the z neighbours of its own columns in registers (a ring of three planes per level,
 * the loop unrolled three times so that every slot is a constant) and puts its centre plane
 * into shared memory for the x and y neighbours. A level reads its in-plane neighbours from
 * the plane the level below wrote in the previous iteration, and writes the other one of two
 * shared planes, so one barrier a plane orders them. The tile's valid columns shrink by one
 * per level on every side: a tile writes (k3TX - 2 MS) x (k3TY - 2 MS) columns and the
 * neighbouring tiles recompute the overlap; a chunk's first and last MS planes likewise.
 *
 * Work skipped without changing a value: level l computes only the tile rows and the planes
 * that level l + 1's cells read (rows l .. k3TY - 1 - l: a warp is a row, so the branch is
 * uniform; planes within MS - l of the chunk), which cuts the recomputed cells of a 64 x 16
 * tile's pass of 3 from 1.36x to 1.32x the written ones, and the chunk's from 1.09x to 1.03x.
 *
 * Tests taken out of most planes: a level skips planes only in the chunk's first 2 MS planes,
 * and a z face's ghosts are refilled only on the planes next to it, so the three planes of an
 * iteration that meet neither run a copy of the body without those tests (and without the
 * chunk-range test on the store and the clamp of its plane): the 3D pass is bound by
 * instruction issue (bench/README.md, Nsight Compute: 90 instructions a cell and step, about
 * 66 a computed cell), and the tests were about 20 of a computed cell's 45 PTX instructions
 * (heat fp64, m = 3; 25 remain). TSR_STEPS3_FAST=0 keeps the tests everywhere (the same
 * values). On an H100 (session 20) that took a pass of 3 from 203 to 231 Gcells/s (90 to 69
 * instructions a cell and step, Nsight Compute). Those planes also take their offsets along z
 * from the iteration's first plane without clamps, where the planes they copy in lie inside
 * the allocation (TSR_STEPS3_INCR=1; the clamps and 64-bit products were about 20 of a plane's
 * 110 SASS instructions): on an H200 (session 31, one job) the pass of 3 went from 252.2 to
 * 255.6 Gcells/s and SSP-RK3's 3D pass from 81.0 to 83.8.
 *
 * Input planes copied ahead: the same profile found a fifth of the warps' time waiting on the
 * load of the next input plane, which was one plane ahead in registers (more would not fit
 * the 64 registers a thread of a 1024-thread block may have). Level 0 now lives in a ring of
 * shared planes that cp.async fills TSR_STEPS3_AHEAD planes ahead without registers; level 1
 * reads its in-plane neighbours there, and each thread its own column for its z ring. Timed
 * on an H100 (session 20, one job): one plane ahead 240 Gcells/s, two 238, three 231, five
 * 230, against 231 before. Deeper did not help, so the wait was not the limit; what one plane
 * ahead saves is the level-0 store to shared and the register hand-over. With one ahead the
 * ring's slots are the unrolled loop's constants (session 21: 248 Gcells/s, 1.46x the single
 * step on an H100); unrolling 6 planes so that the levels' parities were constants too (247),
 * or computing every row in the planes without tests instead of skipping (246), gained
 * nothing, and 6 planes took passes of 5 from 206 to 194 (bench/README.md).
 *
 * Resources (nvcc 13, sm_90, -Xptxas -v): the default shape, 32 x 32 threads, one column a
 * thread (a 32 x 32 tile): 62 registers (64 since the ring), one block of 32 warps an SM. On an H200 (bench/gpu_tiles
 * --dim 3, 512^3 fp64, session 15) it ran a pass of 3 at 206 Gcells/s and of 5 at 171, where
 * 32 x 16 threads with 2 columns each (114-121 registers, 16 warps an SM; wave fp64 spilled)
 * ran them at 170 and 88: the pipeline needs the warps to hide its latency. Shared memory
 * ((m - 1) x 2 + ahead + 2) planes x (tile + 2)^2 cells a component: about 83 KB for heat
 * fp64 at m = 3 (227 KB a block on an H100 / H200).
 *
 * Bits: every value is computed by tsr_model_rhs and tsr_stage_update on the values the
 * single-step 3D kernels hand them (a 3x3x3 window, strides 1, 3, 9) and stored in the
 * field's type T before the next level reads it. Ghosts beyond physical faces are refilled per
 * level from the level's own values with tsr_ghost_value: the thread that computes a face's
 * first cell writes the ghost beside it (x and y faces into the shared plane, whose ghost
 * cells' own threads leave them alone; z faces into its own register ring). */

#include "kernels/steps_ring_cuda.cuh"

/* Launch shape; macros so that bench/gpu_tiles can be rebuilt with others (NVCC_APPEND_FLAGS):
 * threads along y (x is always one warp), columns a thread along x and y, planes a block
 * writes, input planes copied ahead (fewer where shared memory runs out), blocks an SM (__launch_bounds__: caps registers), and
 * whether rows and planes no later level reads are skipped; then the planes without the tests
 * (above), and their offsets without clamps. */
#ifndef TSR_STEPS3_BY
#define TSR_STEPS3_BY 32
#endif
#ifndef TSR_STEPS3_CX
#define TSR_STEPS3_CX 1
#endif
#ifndef TSR_STEPS3_CY
#define TSR_STEPS3_CY 1
#endif
#ifndef TSR_STEPS3_CHUNK
#define TSR_STEPS3_CHUNK 64
#endif
#ifndef TSR_STEPS3_AHEAD
#define TSR_STEPS3_AHEAD 1
#endif
#ifndef TSR_STEPS3_MINB
#define TSR_STEPS3_MINB 1
#endif
#ifndef TSR_STEPS3_SKIP
#define TSR_STEPS3_SKIP 1
#endif
#ifndef TSR_STEPS3_FAST
#define TSR_STEPS3_FAST 1
#endif
#ifndef TSR_STEPS3_INCR
#define TSR_STEPS3_INCR 1
#endif
constexpr int k3BY = TSR_STEPS3_BY, k3CX = TSR_STEPS3_CX, k3CY = TSR_STEPS3_CY;
constexpr int k3Threads = 32 * k3BY;
constexpr int k3TX = 32 * k3CX, k3TY = k3BY * k3CY; /* the tile's level-0 columns */
constexpr int k3Q = k3CX * k3CY;                    /* columns a thread */
constexpr int k3W = k3TX + 2, k3Plane = k3W * (k3TY + 2); /* a shared plane, with a rim */
static_assert(k3Plane % 2 == 0, "an even plane keeps the levels' double planes after level 0's aligned");
constexpr int k3Chunk = TSR_STEPS3_CHUNK, k3Ahead = TSR_STEPS3_AHEAD;
constexpr bool k3Skip = TSR_STEPS3_SKIP != 0;
constexpr bool k3Fast = TSR_STEPS3_FAST != 0;
constexpr bool k3Incr = TSR_STEPS3_INCR != 0;
/* the two-component models' kernels spill at 64 registers already (-Xptxas -v): the body's
 * second copy is for one component */
template <int NC>
constexpr bool k3FastFor = k3Fast && NC == 1;
static_assert(k3Ahead >= 1 && k3Chunk >= 1 && k3BY >= 1 && k3CX >= 1 && k3CY >= 1,
              "TSR_STEPS3_*: positive values");

/* A physical face in 3D: its tangential axes and the cells its values cover along them
 * (absolute first cell and count), value of component c at (a, b): val[(c n2 + b) n1 + a]. */
struct face3_arg {
  int on, type;
  double h;
  const double *val;
  int t1, t2, o1, n1, o2, n2;
};

template <typename T>
struct steps3_args {
  const T *__restrict__ in;
  const T *__restrict__ src;
  T *out;
  tsr_cell_coef coef;
  double dt;
  ptrdiff_t sy, sz, sc;
  int g0[3], g1[3]; /* the field's allocated extent (gbox), for clamped loads */
  int r0[3], r1[3]; /* region */
  int b0[3], b1[3]; /* box */
  face3_arg face[6]; /* 2 axis + side */
  ptrdiff_t origin;  /* offset of cell g0 */
};

__device__ __forceinline__ int axis_of(int t, int x, int y, int z) {
  return t == 0 ? x : (t == 1 ? y : z);
}

/* Whether face f's values cover cell (x, y, z), and component c's value there. */
__device__ __forceinline__ bool face3_covers(const face3_arg &f, int x, int y, int z) {
  const int u = axis_of(f.t1, x, y, z) - f.o1, v = axis_of(f.t2, x, y, z) - f.o2;
  return u >= 0 && u < f.n1 && v >= 0 && v < f.n2;
}
__device__ __forceinline__ double face3_value(const face3_arg &f, int c, int x, int y, int z) {
  const int u = axis_of(f.t1, x, y, z) - f.o1, v = axis_of(f.t2, x, y, z) - f.o2;
  return __ldg(f.val + ((ptrdiff_t)c * f.n2 + v) * f.n1 + u);
}

/* Per-column flags: written by level MS, its shared cell kept (not a ghost of an x or y face),
 * first cell of a face (x lo, x hi, y lo, y hi), covered by a z face's values (lo, hi). */
enum { F3_STORE = 1, F3_KEEP = 2, F3_XLO = 4, F3_XHI = 8, F3_YLO = 16, F3_YHI = 32,
       F3_ZLO = 64, F3_ZHI = 128 };

/* Shared memory: level 0 (the input) in a ring of D planes, D - 2 of them in flight (copied
 * without registers, cp.async), as many as TSR_STEPS3_AHEAD asks within the 227 KB a block may
 * have on sm_90; levels 1 .. MS - 1 in two planes each (by parity). Level MS goes to memory.
 * RK4 (s = 4) keeps its running sums there too, three a column and component, each thread its
 * own (no barrier): in registers they took heat fp64 past the 64 a thread may have (44 bytes
 * spilled, -Xptxas -v). */
constexpr size_t k3SmemMax = 232448;
/* The levels' values on chip (kernels/steps_ring_cuda.cuh): widened for one component only;
 * the two-component kernels, at the 64 registers a 1024-thread block allows, spilled 4-7x the
 * bytes with double levels (SSP-RK3 wave fp32: 56 against 0, -Xptxas -v). */
template <typename T, int NC>
using chip3_t = typename std::conditional<NC == 1, chip_t<T>, T>::type;
__host__ __device__ constexpr size_t chip3_size(size_t es, int nc) {
  return nc == 1 ? chip_size(es) : es;
}
__host__ __device__ constexpr size_t steps3_acc_bytes(int nc, size_t es, int s) {
  return s == 4 ? (size_t)3 * nc * k3Q * k3Threads * chip3_size(es, nc) : 0;
}
/* the levels' planes and sums, held as chip3_t of the field's type (es bytes) */
__host__ __device__ constexpr size_t steps3_level_bytes(int ms, int nc, size_t es, int s) {
  return (size_t)((ms - 1) * 2) * nc * k3Plane * chip3_size(es, nc) + steps3_acc_bytes(nc, es, s);
}
__host__ __device__ constexpr int steps3_stage_planes(int ms, int nc, size_t es, int s = 1) {
  int d = k3Ahead + 2;
  while (d > 3 && (size_t)d * nc * k3Plane * es + steps3_level_bytes(ms, nc, es, s) > k3SmemMax)
    --d;
  return d;
}
__host__ __device__ constexpr size_t steps3_bytes(int ms, int nc, size_t es, int s = 1) {
  return (size_t)steps3_stage_planes(ms, nc, es, s) * nc * k3Plane * es +
         steps3_level_bytes(ms, nc, es, s);
}

/* S: stages a step, as in the 2D kernel: a pass of a scheme of several stages is one step, its
 * base level 0, whose plane zr is in the column's register ring for the first two stages and,
 * for the third, the plane the ring's slot held before plane z came in (base3); RK4's running
 * sums in a ring of three planes, the fourth stage's saved before the first takes its slot
 * (acc4). */
template <int M, int NC, int MS, bool SRC, typename T, int S = 1>
__global__ void __launch_bounds__(k3Threads, TSR_STEPS3_MINB) steps3_kernel(const steps3_args<T> a) {
  static_assert(S == 1 || MS == S, "a pass of a scheme of several stages is one step");
  extern __shared__ double steps3_smem[];
  T *const sh = reinterpret_cast<T *>(steps3_smem);
  const int tx = (int)threadIdx.x, ty = (int)threadIdx.y, tid = ty * 32 + tx;
  const int x0 = a.r0[0] + (int)blockIdx.x * (k3TX - 2 * MS) - MS; /* the tile's first column */
  const int y0 = a.r0[1] + (int)blockIdx.y * (k3TY - 2 * MS) - MS;
  const int cz0 = a.r0[2] + (int)blockIdx.z * k3Chunk;
  const int cz1 = cz0 + k3Chunk < a.r1[2] ? cz0 + k3Chunk : a.r1[2];
  const int z0 = cz0 - MS, z1 = cz1 + MS; /* the planes the pipeline takes in */

  tsr_cell_coef kc = a.coef;
  kc.dim = 3;
  kc.sy = 3;
  kc.sz = 9;
  kc.scomp = 27;

  /* every column computes every level it is asked for, valid or not (no branch per cell): a
   * value outside level l's cells is never read by a cell inside level l + 1's */
  int fl[k3Q];
  int edge[k3Q];   /* the column's tile row's distance from the tile's nearer y edge */
  ptrdiff_t ld[k3Q]; /* offsets of the columns on plane g0[2] (clamped into the allocation) */
  int anyface = 0;
#pragma unroll
  for (int q = 0; q < k3Q; ++q) {
    const int i = tx + 32 * (q % k3CX), j = ty + k3BY * (q / k3CX), x = x0 + i, y = y0 + j;
    int f = 0;
    if (i >= MS && i < k3TX - MS && j >= MS && j < k3TY - MS && x < a.r1[0] && y < a.r1[1])
      f |= F3_STORE;
    if (!((a.face[0].on && x == a.b0[0] - 1) || (a.face[1].on && x == a.b1[0]) ||
          (a.face[2].on && y == a.b0[1] - 1) || (a.face[3].on && y == a.b1[1])))
      f |= F3_KEEP;
    if (a.face[0].on && x == a.b0[0]) f |= F3_XLO;
    if (a.face[1].on && x == a.b1[0] - 1) f |= F3_XHI;
    if (a.face[2].on && y == a.b0[1]) f |= F3_YLO;
    if (a.face[3].on && y == a.b1[1] - 1) f |= F3_YHI;
    if (a.face[4].on && face3_covers(a.face[4], x, y, a.b0[2])) f |= F3_ZLO;
    if (a.face[5].on && face3_covers(a.face[5], x, y, a.b1[2] - 1)) f |= F3_ZHI;
    anyface |= f & (F3_XLO | F3_XHI | F3_YLO | F3_YHI);
    fl[q] = f;
    edge[q] = j < k3TY - 1 - j ? j : k3TY - 1 - j;
    const int xl = x < a.g0[0] ? a.g0[0] : (x >= a.g1[0] ? a.g1[0] - 1 : x);
    const int yl = y < a.g0[1] ? a.g0[1] : (y >= a.g1[1] ? a.g1[1] - 1 : y);
    ld[q] = a.origin + (ptrdiff_t)(xl - a.g0[0]) + (ptrdiff_t)(yl - a.g0[1]) * a.sy;
  }
  /* shared cells no thread writes (the rim, uncovered ghosts) hold zeros, not stale bits */
  for (int k = tid; k < (int)(steps3_bytes(MS, NC, sizeof(T), S) / sizeof(T)); k += k3Threads)
    sh[k] = (T)0;
  anyface = __syncthreads_or(anyface);
  const int zlo_plane = a.face[4].on ? a.b0[2] : INT_MIN;
  const int zhi_plane = a.face[5].on ? a.b1[2] : INT_MIN;
  /* the column's place in a shared plane; its other columns are constants away */
  const int pos0 = (ty + 1) * k3W + tx + 1;
  auto pos = [&](int q) { return pos0 + (q / k3CX) * k3BY * k3W + (q % k3CX) * 32; };

  /* level 0: plane z in ring slot (z - z0) mod D, A planes copied ahead (above) */
  constexpr int D = steps3_stage_planes(MS, NC, sizeof(T), S), A = D - 2;
  using V = chip3_t<T, NC>; /* the levels' values on chip (level 0's ring: T, copied as is) */
  T *const ring = sh;
  /* level l, parity p: (l - 1) * 2 + p */
  V *const lev = reinterpret_cast<V *>(sh + (ptrdiff_t)(D * NC) * k3Plane);
  /* RK4's running sum of column q, component c, in ring slot k (as reg's) */
  V *const accs = lev + (ptrdiff_t)((MS - 1) * 2 * NC) * k3Plane;
  auto acc = [&](int k, int q, int c) -> V & {
    return accs[((k * NC + c) * k3Q + q) * k3Threads + tid];
  };
  /* the offset of plane z, clamped into the allocation */
  auto clamped = [&](int z) {
    const int zl = z < a.g0[2] ? a.g0[2] : (z >= a.g1[2] ? a.g1[2] - 1 : z);
    return (ptrdiff_t)(zl - a.g0[2]) * a.sz;
  };
  auto fetch = [&](ptrdiff_t oz, int slot) { /* oz: the plane's offset; slot: (z - z0) mod D */
    T *const dst = ring + (ptrdiff_t)(slot * NC) * k3Plane;
#pragma unroll
    for (int q = 0; q < k3Q; ++q)
#pragma unroll
      for (int c = 0; c < NC; ++c)
        __pipeline_memcpy_async(dst + c * k3Plane + pos(q), a.in + ld[q] + oz + c * a.sc,
                                sizeof(T));
    __pipeline_commit();
  };
#pragma unroll
  for (int r = 0; r < A; ++r) fetch(clamped(z0 + r), r);

  /* reg[l][q][c][k]: component c of column q at level l, plane p with (p - z0) mod 3 = k */
  V reg[MS][k3Q][NC][3];
  V base3[k3Q][NC]; /* SSP-RK3 and RK4: level 0's plane z - 3 */
  V acc4[k3Q][NC]; /* RK4: plane z - 4's running sum */
#pragma unroll
  for (int l = 0; l < MS; ++l)
#pragma unroll
    for (int q = 0; q < k3Q; ++q)
#pragma unroll
      for (int c = 0; c < NC; ++c) reg[l][q][c][0] = reg[l][q][c][1] = reg[l][q][c][2] = (V)0;
#pragma unroll
  for (int q = 0; q < k3Q; ++q)
#pragma unroll
    for (int c = 0; c < NC; ++c)
      base3[q][c] = acc4[q][c] = (V)0;

  /* a cell's x and y neighbours in a shared plane (of T or V values) into its window */
  auto gather_xy = [](const auto *pc, double *wp) {
    wp[-1] = (double)pc[-1];
    wp[1] = (double)pc[1];
    wp[-3] = (double)pc[-k3W];
    wp[3] = (double)pc[k3W];
  };

  /* One plane of the pipeline: plane z in, level l's plane z - l computed; R = (z - z0) mod 3.
   * CK: whether this plane's levels may skip a plane (the chunk's first 2 MS planes) or meet a
   * z face (a plane of ghosts to refill); the planes in between, most of a chunk, leave the
   * tests out. Level l's planes have parity (z - l) & 1, one of two bases a plane. ozz: plane
   * z's offset, (z - g0) sz, where the planes without the tests need no clamp (k3Incr). */
  auto plane = [&](auto rc, auto ck, int z, ptrdiff_t ozz) {
    constexpr int R = decltype(rc)::value;
    constexpr bool CK = decltype(ck)::value;
    /* the ring's slot: R itself where the ring has 3 planes (one ahead, the default) */
    const int sz = D == 3 ? R : (z - z0) % D;
    /* plane z + A goes to the slot of plane z - 2, which the last barrier freed */
    fetch(!CK && k3Incr ? ozz + A * a.sz : clamped(z + A),
          D == 3 ? (R + 1) % 3 : (z + A - z0) % D);
    __pipeline_wait_prior(A); /* this thread's copies of plane z have landed */
    const T *const in0 = ring + (ptrdiff_t)(sz * NC) * k3Plane;
    const T *const in1 = ring + (ptrdiff_t)((sz == 0 ? D - 1 : sz - 1) * NC) * k3Plane;
#pragma unroll
    for (int q = 0; q < k3Q; ++q)
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        if (S >= 3) base3[q][c] = reg[0][q][c][R];
        if (S == 4) acc4[q][c] = acc(slot<R>(-1), q, c);
        reg[0][q][c][R] = in0[c * k3Plane + pos(q)];
      }
    /* level l's plane z - l has parity (z & 1) ^ (l & 1) */
    const int par = z & 1;
    V *const base[2] = {lev + (ptrdiff_t)(par * NC) * k3Plane,
                        lev + (ptrdiff_t)((par ^ 1) * NC) * k3Plane};
#pragma unroll
    for (int l = 1; l <= MS; ++l) {
      const int zr = z - l;
      if (CK && k3Skip && (zr < cz0 - (MS - l) || zr >= cz1 + (MS - l))) continue;
      const int lo = slot<R>(-l - 1), mid = slot<R>(-l), hi = slot<R>(-l + 1);
      /* level l - 1's plane zr (landed or written in the previous iteration) and level l's */
      const V *sp = l == 1 ? nullptr : base[l & 1] + (ptrdiff_t)((l - 2) * 2 * NC) * k3Plane;
      V *sn = base[l & 1] + (ptrdiff_t)((l - 1) * 2 * NC) * k3Plane;
      /* without a source only level MS's store reads oz, inside the chunk on a plane without
       * the tests */
      const ptrdiff_t oz = CK || SRC ? clamped(zr)
                           : k3Incr  ? ozz - l * a.sz
                                     : (ptrdiff_t)(zr - a.g0[2]) * a.sz;
#pragma unroll
      for (int q = 0; q < k3Q; ++q) {
        const int j = ty + k3BY * (q / k3CX); /* the column's tile row */
        if (k3Skip && (k3FastFor<NC> ? edge[q] < l : j < l || j >= k3TY - l))
          continue; /* uniform: a warp is a row */
        const int p = pos(q);
        double w[NC * 27];
#pragma unroll
        for (int c = 0; c < NC; ++c) {
          double *wp = w + c * 27 + 13;
          wp[0] = (double)reg[l - 1][q][c][mid];
          wp[-9] = (double)reg[l - 1][q][c][lo];
          wp[9] = (double)reg[l - 1][q][c][hi];
          if (l == 1) gather_xy(in1 + c * k3Plane + p, wp); /* level 0: T */
          else gather_xy(sp + c * k3Plane + p, wp);
        }
        double r[TSR_MAX_COMP] = {0};
        tsr_model_rhs(M, w + 13, &kc, r);
        T v[NC];
#pragma unroll
        for (int c = 0; c < NC; ++c) {
          const double rc = SRC ? r[c] + (double)__ldg(a.src + ld[q] + oz + c * a.sc) : r[c];
          v[c] = level_update<S, T>(l, a.dt, reg[0][q][c][mid], base3[q][c], &acc(mid, q, c),
                                 acc4[q][c], w[c * 27 + 13], rc);
        }
        if (l == MS) {
          /* a plane without the tests lies inside the chunk */
          if ((fl[q] & F3_STORE) && (!CK || (zr >= cz0 && zr < cz1))) {
            const ptrdiff_t o = ld[q] + oz;
#pragma unroll
            for (int c = 0; c < NC; ++c) a.out[o + c * a.sc] = v[c];
          }
          continue;
        }
        const int x = x0 + tx + 32 * (q % k3CX), y = y0 + j;
        /* the ghost plane beyond the high z face: from this column's plane below it */
        if (CK && zr == zhi_plane && (fl[q] & F3_ZHI)) {
#pragma unroll
          for (int c = 0; c < NC; ++c)
            v[c] = (T)tsr_ghost_value(a.face[5].type, face3_value(a.face[5], c, x, y, zr),
                                      (double)reg[l][q][c][lo], 1, a.face[5].h);
        }
#pragma unroll
        for (int c = 0; c < NC; ++c) {
          const V vc = v[c];
          reg[l][q][c][mid] = vc;
          if (fl[q] & F3_KEEP) sn[c * k3Plane + p] = vc;
        }
        /* the ghost plane below the low z face, beside its first plane */
        if (CK && zr == zlo_plane && (fl[q] & F3_ZLO)) {
#pragma unroll
          for (int c = 0; c < NC; ++c)
            reg[l][q][c][lo] = (T)tsr_ghost_value(a.face[4].type,
                                                  face3_value(a.face[4], c, x, y, zr - 1),
                                                  (double)v[c], 1, a.face[4].h);
        }
        /* the ghost cells beside the x and y faces' first cells, in the shared plane */
        if (anyface && (fl[q] & (F3_XLO | F3_XHI | F3_YLO | F3_YHI))) {
          const int f4[4] = {F3_XLO, F3_XHI, F3_YLO, F3_YHI};
          const int d4[4] = {-1, 1, -k3W, k3W};
#pragma unroll
          for (int f = 0; f < 4; ++f) {
            if (!(fl[q] & f4[f])) continue;
            const face3_arg &fa = a.face[f];
            if (!face3_covers(fa, x, y, zr)) continue;
#pragma unroll
            for (int c = 0; c < NC; ++c)
              sn[c * k3Plane + p + d4[f]] = (T)tsr_ghost_value(
                  fa.type, face3_value(fa, c, x, y, zr), (double)v[c], 1, fa.h);
          }
        }
      }
    }
    /* every level reads only planes earlier iterations wrote, from the other parity: one
     * barrier a plane orders them */
    __syncthreads();
  };

  using R0 = std::integral_constant<int, 0>;
  using R1 = std::integral_constant<int, 1>;
  using R2 = std::integral_constant<int, 2>;
  using ON = std::integral_constant<bool, true>;
  using OFF = std::integral_constant<bool, false>;
#pragma unroll 1
  for (int z = z0; z < z1; z += 3) {
    /* the three planes' levels 1 .. MS - 1 (those that refill ghosts) reach planes
     * z - MS + 1 .. z + 1; no level skips a plane from z0 + 2 MS on; the planes copied in,
     * up to z + 2 + A, lie inside the allocation (no clamp) */
    const bool fast = k3FastFor<NC> && z >= z0 + 2 * MS && z + 2 < z1 &&
                      z + 2 + A < a.g1[2] && (zlo_plane < z - MS + 1 || zlo_plane > z + 1) &&
                      (zhi_plane < z - MS + 1 || zhi_plane > z + 1);
    if (fast) {
      const ptrdiff_t oz = (ptrdiff_t)(z - a.g0[2]) * a.sz;
      plane(R0{}, OFF{}, z, oz);
      plane(R1{}, OFF{}, z + 1, oz + a.sz);
      plane(R2{}, OFF{}, z + 2, oz + 2 * a.sz);
    } else {
      plane(R0{}, ON{}, z, 0);
      if (z + 1 < z1) plane(R1{}, ON{}, z + 1, 0);
      if (z + 2 < z1) plane(R2{}, ON{}, z + 2, 0);
    }
  }
}

/* The kernel's arguments for a pass over region rg (host code; tsr_steps_cuda has checked
 * them), and its grid: tiles along x and y, chunks along z. */
template <typename T>
void steps3_fill(steps3_args<T> *a, const tsr_stage_desc *s, const tsr_box *rg,
                 const tsr_steps_bc *bc, const tsr_field *in, const tsr_field *src,
                 tsr_field *out) {
  a->in = static_cast<const T *>(in->data);
  a->src = src ? static_cast<const T *>(src->data) : nullptr;
  a->out = static_cast<T *>(out->data);
  a->coef = s->coef;
  a->coef.dt = s->dt;
  a->dt = s->dt;
  a->sy = in->sy;
  a->sz = in->sz;
  a->sc = in->scomp;
  for (int d = 0; d < 3; ++d) {
    a->g0[d] = in->gbox.lo[d];
    a->g1[d] = in->gbox.hi[d];
    a->r0[d] = rg->lo[d];
    a->r1[d] = rg->hi[d];
    a->b0[d] = in->box.lo[d];
    a->b1[d] = in->box.hi[d];
  }
  a->origin = tsr_field_at(in, 0, a->g0[0], a->g0[1], a->g0[2]);
  for (int f = 0; f < 6; ++f) a->face[f] = face3_arg{0, 0, 0.0, nullptr, 0, 1, 0, 0, 0, 0};
  for (int i = 0; bc && i < bc->nface; ++i) {
    const tsr_bc_face *fc = &bc->face[i];
    face3_arg &fa = a->face[2 * fc->axis + fc->side];
    fa.on = 1;
    fa.type = fc->type;
    fa.h = fc->h;
    fa.val = bc->val[i];
    fa.t1 = fc->t1;
    fa.t2 = fc->t2;
    fa.o1 = in->box.lo[fc->t1] + fc->o1;
    fa.n1 = fc->n1;
    fa.o2 = in->box.lo[fc->t2] + fc->o2;
    fa.n2 = fc->n2;
  }
}

inline void steps3_grid(const tsr_box *rg, int m, int g[3]) {
  g[0] = (tsr_box_len(rg, 0) + k3TX - 2 * m - 1) / (k3TX - 2 * m);
  g[1] = (tsr_box_len(rg, 1) + k3TY - 2 * m - 1) / (k3TY - 2 * m);
  g[2] = (tsr_box_len(rg, 2) + k3Chunk - 1) / k3Chunk;
}
