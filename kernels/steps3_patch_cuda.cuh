/* The 3D time-tile kernel for few warps (steps3p_kernel), part of kernels/steps_cuda.cu:
 * included by kernels/steps_launch_cuda.cuh after kernels/steps3_cuda.cuh, whose arguments,
 * faces, chunks and level pipeline it shares. Not a header of its own to include elsewhere.
 *
 * Why a second 3D kernel: steps3_kernel runs 32 warps an SM, a column a thread, and is bound
 * by latency at half the issue rate with every register in use (bench/README.md, "The 3D pass
 * against its arithmetic"): 64.6 instructions a cell and step, of which about 22 are
 * arithmetic; every thread reads its four in-plane neighbours from shared memory. This one goes
 * the other way, as EBISU (ICS '23) does: fewer warps (one block of kpThreads an SM, up to
 * 65536 / kpThreads registers a thread) and a patch of kpPX x kpPY adjacent columns a thread,
 * whose cells are independent work for the scheduler and read each other's in-plane values
 * from registers. With 2 x 2 patches a level's cell makes 2 shared accesses instead of 5 (a
 * patch row is one aligned access), and the tile grows to 64 x 32 columns, which recomputes
 * 1.36 cells a written one at m = 3 instead of 1.51. Level 0's planes are copied in by rows
 * (cp.async, coalesced) one plane ahead; a thread waits for its copies and the barrier at the
 * end of a plane makes them everyone's.
 *
 * The values: every cell is computed as steps3_kernel computes it (the same window, model,
 * stage update and ghost refills), so the bits are the same. Where a ghost of an x or y face
 * lies inside the patch of the face's first cell, the refill writes the patch's register too,
 * since its neighbours read it there. A cell outside level l's valid cells is computed with
 * whatever its neighbours hold and never read by a valid cell of level l + 1 (as in
 * steps3_kernel); a patch computes level l where any of its rows is at least l from the
 * tile's y edges.
 *
 * Taken (steps3p_takes) for one-component models' forward Euler passes of 3 where
 * TSR_STEPS3_PATCH is set; the other passes keep steps3_kernel (a pass of 5 would keep 5
 * levels of rings in registers).
 *
 * Measured (session 32, one H200, bench/tiles_variant.sh, 512^3 heat fp64, pass of 3, every
 * variant bitwise against tsr_steps_host; steps3_kernel 256 Gcells/s in each job): slower in
 * every shape. 2 x 2 patches, 16 warps: 183 (128 registers, 268 bytes spilled); 1 x 4, 8 warps:
 * 176; 2 x 2, 8 warps (64 x 16 tiles): 157; 2 x 4, 8 warps: 141; 1 x 2, 16 warps, two planes
 * ahead: 244 (0.95x), one ahead 219; loading every level's neighbours before the first store
 * (TSR_STEPS3P_PRELOAD) lost 8-15%. bench/README.md, "A kernel for few warps". Not kept in the
 * tree: this commit is where it can be rebuilt. */

#ifndef TSR_STEPS3_PATCH
#define TSR_STEPS3_PATCH 0
#endif
#ifndef TSR_STEPS3P_PX
#define TSR_STEPS3P_PX 2
#endif
#ifndef TSR_STEPS3P_PY
#define TSR_STEPS3P_PY 2
#endif
#ifndef TSR_STEPS3P_BY
#define TSR_STEPS3P_BY 16
#endif
/* input planes copied ahead (1 or 2), and whether a plane's shared loads of every level are
 * issued before its first store (the compiler cannot move them past the stores itself) */
#ifndef TSR_STEPS3P_AHEAD
#define TSR_STEPS3P_AHEAD 2
#endif
#ifndef TSR_STEPS3P_PRELOAD
#define TSR_STEPS3P_PRELOAD 1
#endif
constexpr int kpPX = TSR_STEPS3P_PX, kpPY = TSR_STEPS3P_PY, kpBY = TSR_STEPS3P_BY;
constexpr int kpA = TSR_STEPS3P_AHEAD, kpD = kpA + 2; /* level 0's ring: kpD planes */
constexpr bool kpPreload = TSR_STEPS3P_PRELOAD != 0;
constexpr int kpThreads = 32 * kpBY;
constexpr int kpTX = 32 * kpPX, kpTY = kpBY * kpPY, kpQ = kpPX * kpPY;
/* a shared row: a spare cell, the rim, kpTX cells, the rim, a spare cell, so that the cells
 * start at an even index and a patch's row is one aligned access */
constexpr int kpW = kpTX + 4;
constexpr int kpPlane = (kpW * (kpTY + 2) + 3) / 4 * 4; /* keeps the levels' planes aligned */
constexpr int kpRows = kpThreads / kpTX;                /* rows of a plane copied at once */
constexpr int kpCopies = kpTY / kpRows;                 /* cells a thread copies a plane */
static_assert(kpPX == 1 || kpPX == 2, "TSR_STEPS3P_PX: 1 or 2");
static_assert(kpA == 1 || kpA == 2, "TSR_STEPS3P_AHEAD: 1 or 2");
static_assert(kpPY >= 1 && kpBY >= 1, "TSR_STEPS3P_*: positive values");
static_assert(kpThreads % kpTX == 0 && kpTY % kpRows == 0,
              "a block's threads copy whole rows of a plane");

__host__ __device__ constexpr bool steps3p_takes(int nc, int stages, int ms) {
  return TSR_STEPS3_PATCH != 0 && nc == 1 && stages == 1 && ms == 3;
}
/* level 0 in a ring of kpD planes of T; levels 1 .. ms - 1 in two planes each, of chip_t<T> */
__host__ __device__ constexpr size_t steps3p_bytes(int ms, size_t es) {
  return (size_t)kpD * kpPlane * es + (size_t)((ms - 1) * 2) * kpPlane * chip_size(es);
}
inline void steps3p_grid(const tsr_box *rg, int m, int g[3]) {
  g[0] = (tsr_box_len(rg, 0) + kpTX - 2 * m - 1) / (kpTX - 2 * m);
  g[1] = (tsr_box_len(rg, 1) + kpTY - 2 * m - 1) / (kpTY - 2 * m);
  g[2] = (tsr_box_len(rg, 2) + k3Chunk - 1) / k3Chunk;
}

template <typename U>
struct alignas(2 * sizeof(U)) pair_of {
  U a, b;
};
/* a patch row's kpPX values at p (an even index of an aligned plane), one access */
template <typename U, typename D>
__device__ __forceinline__ void row_load(const U *p, D *o) {
  if constexpr (kpPX == 2) {
    const pair_of<U> v = *reinterpret_cast<const pair_of<U> *>(p);
    o[0] = (D)v.a;
    o[1] = (D)v.b;
  } else {
    o[0] = (D)p[0];
  }
}
template <typename U>
__device__ __forceinline__ void row_store(U *p, const U *o) {
  if constexpr (kpPX == 2) *reinterpret_cast<pair_of<U> *>(p) = pair_of<U>{o[0], o[1]};
  else p[0] = o[0];
}

/* A face's ghost value beside cell (x, y, z) of value inner, where its values cover the cell.
 * Out of line: the refills are rare (tiles at a physical face, planes next to a z face), and
 * inline they held their addresses and values in registers through every plane (heat fp64,
 * 2 x 2 patches: 144 bytes spilled at 128 registers, none without them; -Xptxas -v). */
struct ghost_out {
  double g;
  bool on;
};
#ifndef TSR_STEPS3P_OUTLINE
#define TSR_STEPS3P_OUTLINE 0
#endif
#if TSR_STEPS3P_OUTLINE
#define TSR_STEPS3P_GHOST __noinline__
#else
#define TSR_STEPS3P_GHOST __forceinline__
#endif
__device__ TSR_STEPS3P_GHOST ghost_out steps3p_ghost(const face3_arg f, int x, int y, int z,
                                                  double inner) {
  if (!face3_covers(f, x, y, z)) return ghost_out{0.0, false};
  return ghost_out{tsr_ghost_value(f.type, face3_value(f, 0, x, y, z), inner, 1, f.h), true};
}

template <int M, int MS, bool SRC, typename T>
__global__ void __launch_bounds__(kpThreads, 1) steps3p_kernel(const steps3_args<T> a) {
  extern __shared__ double steps3_smem[];
  using V = chip_t<T>;
  T *const ring = reinterpret_cast<T *>(steps3_smem);
  V *const lev = reinterpret_cast<V *>(ring + kpD * kpPlane); /* level l, parity p: (l-1)*2+p */
  const int tx = (int)threadIdx.x, ty = (int)threadIdx.y, tid = ty * 32 + tx;
  const int x0 = a.r0[0] + (int)blockIdx.x * (kpTX - 2 * MS) - MS; /* the tile's first column */
  const int y0 = a.r0[1] + (int)blockIdx.y * (kpTY - 2 * MS) - MS;
  const int cz0 = a.r0[2] + (int)blockIdx.z * k3Chunk;
  const int cz1 = cz0 + k3Chunk < a.r1[2] ? cz0 + k3Chunk : a.r1[2];
  const int z0 = cz0 - MS, z1 = cz1 + MS;

  tsr_cell_coef kc = a.coef;
  kc.dim = 3;
  kc.sy = 3;
  kc.sz = 9;
  kc.scomp = 27;

  /* the patch: tile cells (i0 + u, j0 + v), q = v kpPX + u; flags as steps3_kernel's */
  const int i0 = kpPX * tx, j0 = kpPY * ty;
  int fl[kpQ];
  int anyface = 0, keepall = 1, pedge = 0;
#pragma unroll
  for (int q = 0; q < kpQ; ++q) {
    const int i = i0 + q % kpPX, j = j0 + q / kpPX, x = x0 + i, y = y0 + j;
    int f = 0;
    if (i >= MS && i < kpTX - MS && j >= MS && j < kpTY - MS && x < a.r1[0] && y < a.r1[1])
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
    keepall &= (f & F3_KEEP) != 0;
    const int e = j < kpTY - 1 - j ? j : kpTY - 1 - j;
    pedge = e > pedge ? e : pedge;
    fl[q] = f;
  }
  /* the cells this thread copies into level 0's ring: column ic of rows jc + n kpRows */
  const int ic = tid % kpTX, jc = tid / kpTX;
  ptrdiff_t co[kpCopies];
  {
    const int x = x0 + ic, xl = x < a.g0[0] ? a.g0[0] : (x >= a.g1[0] ? a.g1[0] - 1 : x);
#pragma unroll
    for (int n = 0; n < kpCopies; ++n) {
      const int y = y0 + jc + n * kpRows;
      const int yl = y < a.g0[1] ? a.g0[1] : (y >= a.g1[1] ? a.g1[1] - 1 : y);
      co[n] = a.origin + (ptrdiff_t)(xl - a.g0[0]) + (ptrdiff_t)(yl - a.g0[1]) * a.sy;
    }
  }
  const int cpos = (jc + 1) * kpW + ic + 2;
  /* shared cells no thread writes (the rim, uncovered ghosts) hold zeros, not stale bits */
  for (int k = tid; k < (int)(steps3p_bytes(MS, sizeof(T)) / sizeof(T)); k += kpThreads)
    ring[k] = (T)0;
  anyface = __syncthreads_or(anyface);
  const int zlo_plane = a.face[4].on ? a.b0[2] : INT_MIN;
  const int zhi_plane = a.face[5].on ? a.b1[2] : INT_MIN;
  const int pos0 = (j0 + 1) * kpW + i0 + 2; /* the patch's first cell in a shared plane */

  auto clamped = [&](int z) {
    const int zl = z < a.g0[2] ? a.g0[2] : (z >= a.g1[2] ? a.g1[2] - 1 : z);
    return (ptrdiff_t)(zl - a.g0[2]) * a.sz;
  };
  auto fetch = [&](ptrdiff_t oz, int slot) {
    T *const dst = ring + (ptrdiff_t)slot * kpPlane + cpos;
#pragma unroll
    for (int n = 0; n < kpCopies; ++n)
      __pipeline_memcpy_async(dst + n * kpRows * kpW, a.in + co[n] + oz, sizeof(T));
    __pipeline_commit();
  };
#pragma unroll
  for (int r = 0; r < kpA; ++r) fetch(clamped(z0 + r), r);
  __pipeline_wait_prior(kpA - 1);
  __syncthreads();

  /* reg[l][q][k]: cell q of level l, plane p with (p - z0) mod 3 = k */
  V reg[MS][kpQ][3];
#pragma unroll
  for (int l = 0; l < MS; ++l)
#pragma unroll
    for (int q = 0; q < kpQ; ++q) reg[l][q][0] = reg[l][q][1] = reg[l][q][2] = (V)0;

  /* One plane, as steps3_kernel's: plane z in (its copy landed before the last barrier),
   * plane z + 1 copied, level l's plane z - l computed; R = (z - z0) mod 3, the ring's slot. */
  auto plane = [&](auto rc, auto ck, int z, ptrdiff_t ozz) {
    constexpr int R = decltype(rc)::value;
    constexpr bool CK = decltype(ck)::value;
    /* plane z + kpA goes to the slot of plane z - 2, which the last barrier freed */
    const int sz = kpD == 3 ? R : (z - z0) % kpD;
    fetch(CK ? clamped(z + kpA) : ozz + kpA * a.sz, kpD == 3 ? (R + 1) % 3 : (z + kpA - z0) % kpD);
    const T *const in0 = ring + (ptrdiff_t)sz * kpPlane;
    const T *const in1 = ring + (ptrdiff_t)(sz == 0 ? kpD - 1 : sz - 1) * kpPlane;
#pragma unroll
    for (int v = 0; v < kpPY; ++v) {
      V o[kpPX];
      row_load(in0 + pos0 + v * kpW, o);
#pragma unroll
      for (int u = 0; u < kpPX; ++u) reg[0][v * kpPX + u][R] = o[u];
    }
    const int par = z & 1;
    V *const base[2] = {lev + (ptrdiff_t)par * kpPlane, lev + (ptrdiff_t)(par ^ 1) * kpPlane};
    /* whether level l computes this plane (uniform: a warp's lanes share their rows) */
    auto active = [&](int l) {
      const int zr = z - l;
      return !(CK && k3Skip && (zr < cz0 - (MS - l) || zr >= cz1 + (MS - l))) &&
             !(k3Skip && pedge < l);
    };
    /* level l's in-plane neighbours outside the patch, from level l - 1's shared plane z - l
     * (level 0's ring for level 1): above, below, left, right */
    double nb[MS][2 * kpPX + 2 * kpPY];
    auto load_nb = [&](int l) {
      double *const o = nb[l - 1];
      const V *sp = l == 1 ? nullptr : base[l & 1] + (ptrdiff_t)((l - 2) * 2) * kpPlane;
      if (l == 1) {
        row_load(in1 + pos0 - kpW, o);
        row_load(in1 + pos0 + kpPY * kpW, o + kpPX);
      } else {
        row_load(sp + pos0 - kpW, o);
        row_load(sp + pos0 + kpPY * kpW, o + kpPX);
      }
#pragma unroll
      for (int v = 0; v < kpPY; ++v) {
        const int p = pos0 + v * kpW;
        o[2 * kpPX + v] = l == 1 ? (double)in1[p - 1] : (double)sp[p - 1];
        o[2 * kpPX + kpPY + v] = l == 1 ? (double)in1[p + kpPX] : (double)sp[p + kpPX];
      }
    };
    if (kpPreload) {
#pragma unroll
      for (int l = 1; l <= MS; ++l)
        if (active(l)) load_nb(l);
    }
#pragma unroll
    for (int l = 1; l <= MS; ++l) {
      const int zr = z - l;
      if (!active(l)) continue;
      if (!kpPreload) load_nb(l);
      const int lo = slot<R>(-l - 1), mid = slot<R>(-l), hi = slot<R>(-l + 1);
      V *sn = base[l & 1] + (ptrdiff_t)((l - 1) * 2) * kpPlane;
      const ptrdiff_t oz = CK || SRC ? clamped(zr) : ozz - l * a.sz;
      /* the windows: in-plane neighbours inside the patch from registers */
      double w[kpQ][27];
      const double *const above = nb[l - 1], *const below = above + kpPX;
      const double *const left = above + 2 * kpPX, *const right = left + kpPY;
#pragma unroll
      for (int q = 0; q < kpQ; ++q) {
        const int u = q % kpPX, v = q / kpPX;
        double *wp = w[q] + 13;
        wp[0] = (double)reg[l - 1][q][mid];
        wp[-9] = (double)reg[l - 1][q][lo];
        wp[9] = (double)reg[l - 1][q][hi];
        wp[-1] = u > 0 ? (double)reg[l - 1][q - 1][mid] : left[v];
        wp[1] = u < kpPX - 1 ? (double)reg[l - 1][q + 1][mid] : right[v];
        wp[-3] = v > 0 ? (double)reg[l - 1][q - kpPX][mid] : above[u];
        wp[3] = v < kpPY - 1 ? (double)reg[l - 1][q + kpPX][mid] : below[u];
      }
      T vv[kpQ];
#pragma unroll
      for (int q = 0; q < kpQ; ++q) {
        double r[TSR_MAX_COMP] = {0};
        tsr_model_rhs(M, w[q] + 13, &kc, r);
        double rq = r[0];
        if (SRC) {
          const int x = x0 + i0 + q % kpPX, y = y0 + j0 + q / kpPX;
          const int xl = x < a.g0[0] ? a.g0[0] : (x >= a.g1[0] ? a.g1[0] - 1 : x);
          const int yl = y < a.g0[1] ? a.g0[1] : (y >= a.g1[1] ? a.g1[1] - 1 : y);
          rq += (double)__ldg(a.src + a.origin + (xl - a.g0[0]) +
                              (ptrdiff_t)(yl - a.g0[1]) * a.sy + oz);
        }
        V acc = (V)0;
        vv[q] = level_update<1, T>(l, a.dt, reg[0][q][mid], (V)0, &acc, (V)0, w[q][13], rq);
      }
      if (l == MS) {
        /* stored cells lie inside the region, so inside the allocation */
        const ptrdiff_t ob = a.origin + (ptrdiff_t)(x0 + i0 - a.g0[0]) +
                             (ptrdiff_t)(y0 + j0 - a.g0[1]) * a.sy + oz;
#pragma unroll
        for (int q = 0; q < kpQ; ++q)
          if ((fl[q] & F3_STORE) && (!CK || (zr >= cz0 && zr < cz1)))
            a.out[ob + q % kpPX + (ptrdiff_t)(q / kpPX) * a.sy] = vv[q];
        continue;
      }
      /* the ghost plane beyond the high z face: from this cell's plane below it */
      if (CK && zr == zhi_plane) {
#pragma unroll
        for (int q = 0; q < kpQ; ++q)
          if (fl[q] & F3_ZHI) /* covered: the flag says so */
            vv[q] = (T)steps3p_ghost(a.face[5], x0 + i0 + q % kpPX, y0 + j0 + q / kpPX, zr,
                                     (double)reg[l][q][lo]).g;
      }
#pragma unroll
      for (int q = 0; q < kpQ; ++q) reg[l][q][mid] = vv[q];
      if (keepall) {
#pragma unroll
        for (int v = 0; v < kpPY; ++v) {
          V o[kpPX];
#pragma unroll
          for (int u = 0; u < kpPX; ++u) o[u] = reg[l][v * kpPX + u][mid];
          row_store(sn + pos0 + v * kpW, o);
        }
      } else {
#pragma unroll
        for (int q = 0; q < kpQ; ++q)
          if (fl[q] & F3_KEEP) sn[pos0 + (q / kpPX) * kpW + q % kpPX] = vv[q];
      }
      /* the ghost plane below the low z face, beside its first plane */
      if (CK && zr == zlo_plane) {
#pragma unroll
        for (int q = 0; q < kpQ; ++q)
          if (fl[q] & F3_ZLO)
            reg[l][q][lo] = (T)steps3p_ghost(a.face[4], x0 + i0 + q % kpPX,
                                             y0 + j0 + q / kpPX, zr - 1, (double)vv[q]).g;
      }
      /* the ghost cells beside the x and y faces' first cells, in the shared plane and, where
       * they lie in this patch, in its registers */
      if (anyface) {
#pragma unroll
        for (int q = 0; q < kpQ; ++q) {
          if (!(fl[q] & (F3_XLO | F3_XHI | F3_YLO | F3_YHI))) continue;
          const int u = q % kpPX, v = q / kpPX, x = x0 + i0 + u, y = y0 + j0 + v;
          const int f4[4] = {F3_XLO, F3_XHI, F3_YLO, F3_YHI};
          const int d4[4] = {-1, 1, -kpW, kpW};
          const int dq[4] = {-1, 1, -kpPX, kpPX};
          const bool in4[4] = {u > 0, u < kpPX - 1, v > 0, v < kpPY - 1};
#pragma unroll
          for (int f = 0; f < 4; ++f) {
            if (!(fl[q] & f4[f])) continue;
            const ghost_out go = steps3p_ghost(a.face[f], x, y, zr, (double)vv[q]);
            if (!go.on) continue;
            const T g = (T)go.g;
            sn[pos0 + v * kpW + u + d4[f]] = g;
            if (in4[f]) reg[l][q + dq[f]][mid] = g;
          }
        }
      }
    }
    /* this thread's copies of plane z + 1 have landed; the barrier makes them everyone's and
     * orders the levels' planes, as in steps3_kernel */
    __pipeline_wait_prior(kpA - 1);
    __syncthreads();
  };

  using R0 = std::integral_constant<int, 0>;
  using R1 = std::integral_constant<int, 1>;
  using R2 = std::integral_constant<int, 2>;
  using ON = std::integral_constant<bool, true>;
  using OFF = std::integral_constant<bool, false>;
#pragma unroll 1
  for (int z = z0; z < z1; z += 3) {
    /* as steps3_kernel's: the planes copied in, up to z + 2 + kpA, lie inside the allocation */
    const bool fast = k3Fast && z >= z0 + 2 * MS && z + 2 < z1 && z + 2 + kpA < a.g1[2] &&
                      (zlo_plane < z - MS + 1 || zlo_plane > z + 1) &&
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
