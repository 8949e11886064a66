/* The stage's shared-memory tile kernels (tile_kernel, atile_kernel), part of
 * kernels/stage_cuda.cuh: included there inside its anonymous namespace, after stage_args,
 * ldg, ring_fill and store_cell, which these kernels share with the register kernel. Not a
 * header of its own to include elsewhere. */

/* ---- 3D regions through shared memory ("tiles") ---------------------------------------
 * The register kernel (stage_cuda.cuh) reads the in-plane neighbours through L1 and L2: Nsight
 * Compute puts it at 2.1-2.75 L2 bytes per DRAM byte, L2 84-96% busy, which is what holds the
 * 3D stage at 0.6-0.8 of copy bandwidth. Here a block of 32 x kTBY threads owns a kTX x kTY
 * tile of the x-y plane (kTCX x kTCY cells per thread) and marches it along z: each step it
 * puts plane m of the tile, with a one-cell rim, into shared memory once (the centres from the
 * threads' register rings, the rim from 2 kTX + 2 kTY further loads), and every cell takes its four
 * in-plane neighbours from there; z neighbours stay in the registers. Per cell that is
 * (kTX + 2)(kTY + 2) / (kTX kTY) ~ 1.16 reads through L2 instead of ~2-3. Two plane buffers
 * alternate, so one barrier per step suffices: a thread can only overwrite a buffer after
 * every thread has passed the barrier of the step after the one that read it.
 *
 * The step is split into tile_put (loads for later planes, stores into shared memory) and
 * tile_update (the cells), with everything a thread carries between them in a tile_thread, so
 * that the CPU emulation (tests/unit/emulate_stage.cu) can run a block's threads phase by
 * phase as the barrier orders them. Cells past the region's end load the cell just past it
 * (inside the field: the ghosts, or owned cells of a larger box), which is what the region's
 * last cells read as neighbours, and store nothing. */
constexpr int kTBY = 8, kTCX = 2, kTCY = 2;
constexpr int kTX = 32 * kTCX, kTY = kTBY * kTCY, kTCells = kTCX * kTCY;
constexpr int kTRing = 4; /* planes m - 1 .. m + 2: one in flight beyond the next step's */
constexpr int kTRim = 2 * kTX + 2 * kTY;
static_assert(kTRim <= 32 * kTBY, "every rim cell needs a thread");

template <int NC, typename T>
struct tile_smem {
  T v[2][NC][kTY + 2][kTX + 2];
};

template <int NC>
struct tile_thread {
  double ring[kTCells][NC][kTRing]; /* centres at m - 1 + r */
  double next[kTCells][NC];         /* the centres at m + 3, loaded during step m */
  double rim[NC], rim_next[NC];     /* this thread's rim cell at m, and at m + 1 */
  ptrdiff_t o[kTCells];             /* offsets of the cells at m (clamped into the field) */
  ptrdiff_t orim;                   /* offset of the rim cell at m; -1: none */
  int sx[kTCells], sy[kTCells];     /* the cells' places in the tile, rim included */
  int rx, ry;                       /* the rim cell's place */
  bool live[kTCells];
};

/* The tile of block b (origin x0, y0) for thread t, at the first plane m0. */
template <int NC, typename T>
__host__ __device__ __forceinline__ void tile_init(const stage_args<T> &a, uint3 t, uint3 b,
                                                   tile_thread<NC> &s, int *m0, int *m1) {
  const int x0 = (int)b.x * kTX, y0 = (int)b.y * kTY;
  *m0 = (int)b.z * a.chunk;
  *m1 = *m0 + a.chunk < a.nz ? *m0 + a.chunk : a.nz;
  const ptrdiff_t ms = a.sz;
#pragma unroll
  for (int qy = 0; qy < kTCY; ++qy)
#pragma unroll
    for (int qx = 0; qx < kTCX; ++qx) {
      const int q = qy * kTCX + qx;
      const int x = (int)t.x + 32 * qx, y = (int)t.y + kTBY * qy;
      const int gx = x0 + x, gy = y0 + y;
      s.live[q] = gx < a.nx && gy < a.ny;
      s.sx[q] = x + 1;
      s.sy[q] = y + 1;
      s.o[q] = a.origin + (gx < a.nx ? gx : a.nx) + (ptrdiff_t)(gy < a.ny ? gy : a.ny) * a.sy +
               (ptrdiff_t)*m0 * ms;
    }
  /* rim: rows -1 and kTY across the tile, then columns -1 and kTX down it */
  const int l = (int)t.y * 32 + (int)t.x;
  s.orim = -1;
  s.rx = s.ry = 0;
  if (l < kTRim) {
    int x, y;
    if (l < 2 * kTX) {
      x = l % kTX;
      y = l < kTX ? -1 : kTY;
    } else {
      const int u = l - 2 * kTX;
      x = u < kTY ? -1 : kTX;
      y = u % kTY;
    }
    const int gx = x0 + x < a.nx ? x0 + x : a.nx, gy = y0 + y < a.ny ? y0 + y : a.ny;
    s.rx = x + 1;
    s.ry = y + 1;
    s.orim = a.origin + gx + (ptrdiff_t)gy * a.sy + (ptrdiff_t)*m0 * ms;
  }
  const T *__restrict__ in = a.in;
  ring_fill(s.ring, in, s.o, a.sc, ms, *m0, *m1);
  if (s.orim >= 0)
#pragma unroll
    for (int c = 0; c < NC; ++c) s.rim[c] = ldg(in + s.orim + c * a.sc);
}

/* Step m, before the barrier: loads of later planes, then plane m into buffer m & 1. */
template <int NC, typename T>
__host__ __device__ __forceinline__ void tile_put(const stage_args<T> &a, tile_thread<NC> &s,
                                                  tile_smem<NC, T> &sm, int m, int m1) {
  const ptrdiff_t ms = a.sz;
  const ptrdiff_t ahead = (ptrdiff_t)((m + kTRing - 1 < m1 ? m + kTRing - 1 : m1) - m) * ms;
  const T *__restrict__ in = a.in;
#pragma unroll
  for (int q = 0; q < kTCells; ++q)
#pragma unroll
    for (int c = 0; c < NC; ++c) s.next[q][c] = ldg(in + s.o[q] + c * a.sc + ahead);
  /* plane m + 1 <= m1 is inside the field (what the ring clamps to) */
  if (s.orim >= 0)
#pragma unroll
    for (int c = 0; c < NC; ++c) s.rim_next[c] = ldg(in + s.orim + c * a.sc + ms);
  const int b = m & 1;
#pragma unroll
  for (int q = 0; q < kTCells; ++q)
#pragma unroll
    for (int c = 0; c < NC; ++c) sm.v[b][c][s.sy[q]][s.sx[q]] = (T)s.ring[q][c][1];
  if (s.orim >= 0)
#pragma unroll
    for (int c = 0; c < NC; ++c) sm.v[b][c][s.ry][s.rx] = (T)s.rim[c];
}

/* Step m, after the barrier: the cells of plane m, then the rings move on. */
template <int M, int NC, int KIND, bool SRC, typename T>
__host__ __device__ __forceinline__ void tile_update(const stage_args<T> &a, tile_thread<NC> &s,
                                                     const tile_smem<NC, T> &sm, int m) {
  constexpr ptrdiff_t wy = 3, wz = 9, wc = 27, wo = 13;
  tsr_cell_coef kc = a.coef;
  kc.dim = 3;
  kc.sy = wy;
  kc.sz = wz;
  kc.scomp = wc;
  const int b = m & 1;
#pragma unroll
  for (int q = 0; q < kTCells; ++q) {
    double w[NC * wc];
    const int x = s.sx[q], y = s.sy[q];
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      double *wp = w + c * wc + wo;
      wp[0] = s.ring[q][c][1];
      wp[-wz] = s.ring[q][c][0];
      wp[wz] = s.ring[q][c][2];
      wp[-1] = (double)sm.v[b][c][y][x - 1];
      wp[1] = (double)sm.v[b][c][y][x + 1];
      wp[-wy] = (double)sm.v[b][c][y - 1][x];
      wp[wy] = (double)sm.v[b][c][y + 1][x];
    }
    double r[TSR_MAX_COMP] = {0};
    tsr_model_rhs(M, w + wo, &kc, r);
    if (s.live[q]) store_cell<NC, KIND, SRC>(a, s.o[q], s.ring[q], r);
  }
#pragma unroll
  for (int q = 0; q < kTCells; ++q) {
#pragma unroll
    for (int c = 0; c < NC; ++c) {
#pragma unroll
      for (int r = 0; r + 1 < kTRing; ++r) s.ring[q][c][r] = s.ring[q][c][r + 1];
      s.ring[q][c][kTRing - 1] = s.next[q][c];
    }
    s.o[q] += a.sz;
  }
  if (s.orim >= 0) {
#pragma unroll
    for (int c = 0; c < NC; ++c) s.rim[c] = s.rim_next[c];
    s.orim += a.sz;
  }
}

template <int M, int NC, int KIND, bool SRC, typename T>
__global__ void __launch_bounds__(32 * kTBY) tile_kernel(const stage_args<T> a) {
  __shared__ tile_smem<NC, T> sm;
  tile_thread<NC> s;
  int m0, m1;
  tile_init<NC>(a, threadIdx, blockIdx, s, &m0, &m1);
#pragma unroll 1
  for (int m = m0; m < m1; ++m) {
    tile_put<NC>(a, s, sm, m, m1);
    __syncthreads();
    tile_update<M, NC, KIND, SRC>(a, s, sm, m);
  }
}

/* ---- 3D tiles fed by asynchronous copies ("async tiles") ---------------------------------
 * Nsight Compute puts tile_kernel at 37.5% of an SM's warps (78 registers, most of them the z
 * rings) with DRAM 71% busy: too few loads in flight (bench/README.md, session 5). Here no plane
 * lives in registers: a block keeps kAPlanes planes of its tile, rim included, in shared
 * memory, filled by asynchronous copies (cp.async) issued two steps before they are needed, so
 * that loads in flight cost shared memory instead of registers. Step m: wait for this thread's
 * copies up to plane m + 1, barrier (every thread's copies have landed, and every thread is
 * done with step m - 1), issue the copies of plane m + 3 into the buffer that held plane m - 2,
 * then update plane m from planes m - 1, m and m + 1. One component only (two would double the
 * shared memory); the cells and the rim are tile_kernel's. */
constexpr int kAPlanes = 5;
constexpr int kAW = kTX + 2, kAH = kTY + 2, kAPlane = kAW * kAH;
constexpr int kAPer = (kAPlane + 32 * kTBY - 1) / (32 * kTBY); /* plane cells a thread copies */

template <typename T>
struct atile_smem {
  T v[kAPlanes][kAPlane];
};

struct atile_thread {
  ptrdiff_t base;     /* offset of the tile's plane m0 - 1 (the region's cell 0, 0 there) */
  int src[kAPer];     /* in-plane offsets of the cells this thread copies */
  int slot[kAPer];    /* their places in a shared plane (y * kAW + x, rim included); -1: none */
  int o[kTCells];     /* in-plane offsets of the thread's cells; -1: past the region */
  int place[kTCells]; /* their places in a shared plane */
};

template <typename T>
__host__ __device__ __forceinline__ void copy_async(T *dst, const T *src) {
#ifdef __CUDA_ARCH__
  __pipeline_memcpy_async(dst, src, sizeof(T));
#else
  *dst = *src;
#endif
}
__host__ __device__ __forceinline__ void copies_commit() {
#ifdef __CUDA_ARCH__
  __pipeline_commit();
#endif
}
/* all but the newest `newest` groups of this thread's copies have landed */
template <int newest>
__host__ __device__ __forceinline__ void copies_wait() {
#ifdef __CUDA_ARCH__
  __pipeline_wait_prior(newest);
#endif
}

template <typename T>
__host__ __device__ __forceinline__ void atile_init(const stage_args<T> &a, uint3 t, uint3 b,
                                                    atile_thread &s, int *m0, int *m1) {
  const int x0 = (int)b.x * kTX, y0 = (int)b.y * kTY;
  *m0 = (int)b.z * a.chunk;
  *m1 = *m0 + a.chunk < a.nz ? *m0 + a.chunk : a.nz;
  s.base = a.origin + (ptrdiff_t)(*m0 - 1) * a.sz;
  const int l = (int)t.y * 32 + (int)t.x;
#pragma unroll
  for (int k = 0; k < kAPer; ++k) {
    const int p = l + k * 32 * kTBY;
    /* rim cells past the region's end read the cell just past it, as tile_kernel's */
    const int x = p % kAW - 1, y = p / kAW - 1;
    const int gx = x0 + x < a.nx ? x0 + x : a.nx, gy = y0 + y < a.ny ? y0 + y : a.ny;
    s.slot[k] = p < kAPlane ? p : -1;
    s.src[k] = gx + gy * (int)a.sy;
  }
#pragma unroll
  for (int q = 0; q < kTCells; ++q) {
    const int x = (int)t.x + 32 * (q % kTCX), y = (int)t.y + kTBY * (q / kTCX);
    const int gx = x0 + x, gy = y0 + y;
    s.o[q] = gx < a.nx && gy < a.ny ? gx + gy * (int)a.sy : -1;
    s.place[q] = (y + 1) * kAW + x + 1;
  }
}

/* This thread's copies of plane p (<= m1, inside the field) into its buffer, as one group; an
 * empty group past m1, so that every thread counts the same groups. */
template <typename T>
__host__ __device__ __forceinline__ void atile_issue(const stage_args<T> &a, const atile_thread &s,
                                                     atile_smem<T> &sm, int p, int m0, int m1) {
  if (p <= m1) {
    const T *plane = a.in + s.base + (ptrdiff_t)(p - m0 + 1) * a.sz;
    T *dst = sm.v[(p - m0 + 1) % kAPlanes];
#pragma unroll
    for (int k = 0; k < kAPer; ++k)
      if (s.slot[k] >= 0) copy_async(dst + s.slot[k], plane + s.src[k]);
  }
  copies_commit();
}

/* Step m after the barrier: the cells of plane m from the three planes around it. */
template <int M, int KIND, bool SRC, typename T>
__host__ __device__ __forceinline__ void atile_update(const stage_args<T> &a, const atile_thread &s,
                                                      const atile_smem<T> &sm, int m, int m0) {
  constexpr ptrdiff_t wy = 3, wz = 9, wo = 13;
  tsr_cell_coef kc = a.coef;
  kc.dim = 3;
  kc.sy = wy;
  kc.sz = wz;
  kc.scomp = 27;
  const T *lo = sm.v[(m - m0) % kAPlanes], *mid = sm.v[(m - m0 + 1) % kAPlanes],
          *hi = sm.v[(m - m0 + 2) % kAPlanes];
  const ptrdiff_t plane = s.base + (ptrdiff_t)(m - m0 + 1) * a.sz;
#pragma unroll
  for (int q = 0; q < kTCells; ++q) {
    double w[27];
    const int c = s.place[q];
    double u[1][2];
    u[0][1] = (double)mid[c];
    w[wo] = u[0][1];
    w[wo - wz] = (double)lo[c];
    w[wo + wz] = (double)hi[c];
    w[wo - 1] = (double)mid[c - 1];
    w[wo + 1] = (double)mid[c + 1];
    w[wo - wy] = (double)mid[c - kAW];
    w[wo + wy] = (double)mid[c + kAW];
    double r[TSR_MAX_COMP] = {0};
    tsr_model_rhs(M, w + wo, &kc, r);
    if (s.o[q] >= 0) store_cell<1, KIND, SRC>(a, plane + s.o[q], u, r);
  }
}

template <int M, int KIND, bool SRC, typename T>
__global__ void __launch_bounds__(32 * kTBY) atile_kernel(const stage_args<T> a) {
  __shared__ atile_smem<T> sm;
  atile_thread s;
  int m0, m1;
  atile_init(a, threadIdx, blockIdx, s, &m0, &m1);
#pragma unroll
  for (int p = -1; p <= 2; ++p) atile_issue(a, s, sm, m0 + p, m0, m1);
#pragma unroll 1
  for (int m = m0; m < m1; ++m) {
    copies_wait<1>(); /* planes up to m + 1; m + 2 may still be in flight */
    __syncthreads();
    atile_issue(a, s, sm, m + 3, m0, m1);
    atile_update<M, KIND, SRC>(a, s, sm, m, m0);
  }
}
