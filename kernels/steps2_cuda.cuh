/* The 2D time-tile kernel (steps_kernel), part of kernels/steps_cuda.cu: included by
 * kernels/steps_launch_cuda.cuh inside its anonymous namespace, and by
 * tests/unit/emulate_steps2.cpp, which runs it on the CPU. Not a
 * header of its own to include elsewhere. MS levels of a 2D region in one pass over memory
 * (kernels/steps.h): MS forward Euler steps, or the stages of an SSP-RK2, SSP-RK3 or RK4 step; 3D
 * regions: kernels/steps3_cuda.cuh.
 *
 * A block of kBX threads covers a tile of kBX columns (x fastest, coalesced; one-component
 * models may take kCols1 columns a thread, kBX apart) and marches along y through a chunk of
 * rows, as the single-step kernel does (kernels/stage_cuda.cuh), but as a pipeline of MS
 * levels: at each row it takes in row y of level 0 (the input, loaded kAhead rows ahead) and
 * computes level l's row y - l from level l - 1's rows y - l - 1 .. y - l + 1, for l = 1 ..
 * MS; only level MS goes to memory. Each thread keeps its own column of every level in
 * registers (the centre and the y neighbours) and shares its centre row through shared memory
 * for the x neighbours. Rows sit in a ring of three slots, registers and shared rows alike,
 * and the loop is unrolled three times so that every slot index is a constant (no moves);
 * every level reads only rows written in earlier iterations, so one barrier a row suffices.
 * The tile's valid columns shrink by one per level, so a tile writes kBX - 2 MS columns and
 * the neighbouring tiles recompute the overlap; a chunk's first and last MS rows likewise.
 *
 * Measured (bench/gpu_tiles, H200, bench/README.md): the pass is bound by instructions, not
 * bytes (Nsight Compute: issue slots 55-87% busy, DRAM far from busy), so every cell computes
 * every level without a branch (values outside a level's cells are computed and never read),
 * and the per-cell conditions of the first version (109 instructions a cell and level, against
 * 56 now) went into per-thread flags set once. With TSR_STEPS_FAST=1 the tests that hold on a
 * few rows only (the store's chunk range, the y faces' ghost rows) are left out of the rows
 * between (session 19, as in 3D; the same values). On an H100 (session 20) that made passes
 * of 3 1.2x faster for heat (395 -> 477 Gcells/s) and 1.16-1.29x for the other models, and
 * passes of 5 of the two-component models 1.6-1.65x; only ignition's passes lost (0.94x), and
 * those do not pay at all (tsr_steps_cuda_max).
 *
 * Bits: every value is computed by tsr_model_rhs and tsr_stage_update on the values the
 * single-step kernel would hand them (gathered into the same 3x3 window, strides 1 and 3) and
 * rounded to the field's type T before the next level reads it, exactly as the stage-by-stage
 * path rounds it into memory (and held on chip as chip_t<T>, double for fp32:
 * kernels/steps_ring_cuda.cuh). Ghosts beyond physical faces are refilled per level from the
 * level's own values with tsr_ghost_value, as the boundary fill does between stages: the
 * thread that computes a face's first cell writes the ghost beside it (the x faces into
 * shared memory for its neighbour's stencil, the y faces into its own register column), and
 * a ghost column's own thread leaves its shared slot alone. */

/* Launch shape; macros so that bench/gpu_tiles can be rebuilt with others (NVCC_APPEND_FLAGS) */
#ifndef TSR_STEPS_BX
#define TSR_STEPS_BX 128
#endif
#ifndef TSR_STEPS_COLS
#define TSR_STEPS_COLS 1
#endif
#ifndef TSR_STEPS_CHUNK
#define TSR_STEPS_CHUNK 256
#endif
#ifndef TSR_STEPS_AHEAD
#define TSR_STEPS_AHEAD 2
#endif
constexpr int kBX = TSR_STEPS_BX;       /* threads per block */
constexpr int kCols1 = TSR_STEPS_COLS;  /* columns per thread (one component), kBX apart */
constexpr int kChunk = TSR_STEPS_CHUNK; /* rows a block writes */
constexpr int kAhead = TSR_STEPS_AHEAD; /* input rows loaded ahead of the one the pipeline takes */
/* the rows without the tests (their second copy of the body takes most instantiations from
 * 50-56 registers to 72-106 at m = 3, -Xptxas -v, and still pays: above) */
#ifndef TSR_STEPS_FAST
#define TSR_STEPS_FAST 1
#endif
constexpr bool kFast2 = TSR_STEPS_FAST != 0;

/* A physical face as the kernel reads it: whether it exists, its ghost type, its values (one
 * per tangential cell and component) and where they start. */
struct face_arg {
  int on, type;
  double h;
  const double *val; /* component c of tangential cell a: val[c * n + a - a0] */
  int a0, n;
};

template <typename T>
struct steps_args {
  const T *__restrict__ in;
  const T *__restrict__ src;
  T *out;
  tsr_cell_coef coef;
  double dt;
  ptrdiff_t sy, sc;
  int gx0, gy0, gx1, gy1; /* the field's allocated extent (gbox), for clamped loads */
  int rx0, rx1, ry0, ry1; /* region */
  int bx0, bx1, by0, by1; /* box */
  int grow[4];            /* 1 where the region grows per level: x lo, x hi, y lo, y hi */
  face_arg face[4];       /* x lo, x hi, y lo, y hi */
  ptrdiff_t origin;       /* offset of cell (gx0, gy0) */
};

template <typename T>
__device__ __forceinline__ ptrdiff_t at(const steps_args<T> &a, int x, int y) {
  return a.origin + (ptrdiff_t)(x - a.gx0) + (ptrdiff_t)(y - a.gy0) * a.sy;
}

__device__ __forceinline__ double face_value(const face_arg &f, int c, int t) {
  return __ldg(f.val + (ptrdiff_t)c * f.n + (t - f.a0));
}

#include "kernels/steps_ring_cuda.cuh"

/* Columns a thread takes: two-component models one (their shared rows and registers are
 * twice as large). */
template <int NC>
__host__ __device__ constexpr int cols_of() {
  return NC == 1 ? kCols1 : 1;
}

/* S: stages a step (1 forward Euler, 2 SSP-RK2, 3 SSP-RK3, 4 RK4); a pass of a scheme of
 * several stages is one step (MS == S), whose base is level 0: its row yr is still in level 0's
 * ring for the first two stages (slot mid), and for the third it is the row the ring's slot
 * held before row y came in (kept in base3). RK4's running sums sit in a ring of three rows
 * like the levels' (level l's row yr in slot mid), and the fourth stage's row, whose slot the
 * first stage takes in the same iteration, is saved first (acc4). */
template <int M, int NC, int MS, bool SRC, typename T, int S = 1>
__global__ void __launch_bounds__(kBX) steps_kernel(const steps_args<T> a) {
  static_assert(S == 1 || MS == S, "a pass of a scheme of several stages is one step");
  constexpr int kCols = cols_of<NC>(), kW = kCols * kBX;
  using V = chip_t<T>; /* the levels' values on chip */
  /* shared rows: level l's row r in slot (r - y0) mod 3, like the registers */
  __shared__ V sh[MS][3][NC][kW + 2];
  const int tx = (int)threadIdx.x;
  const int x0 = a.rx0 + (int)blockIdx.x * (kW - 2 * MS) - MS; /* the tile's first column */
  const int cy0 = a.ry0 + (int)blockIdx.y * kChunk;
  const int cy1 = cy0 + kChunk < a.ry1 ? cy0 + kChunk : a.ry1;
  const int y0 = cy0 - MS, y1 = cy1 + MS; /* the rows the pipeline takes in */

  tsr_cell_coef kc = a.coef;
  kc.dim = 2;
  kc.sy = 3;
  kc.sz = 9;
  kc.scomp = 9;

  /* Every thread computes every level of its columns at every row, valid or not (no branch
   * per cell): a value outside level l's cells is never read by a cell inside level l + 1's,
   * and only level MS's cells inside the region are stored. What does need care: the ghosts
   * of physical faces (written where the face's first cell is computed; a ghost column's own
   * thread leaves its shared slot alone), and loads and face values read in range. */
  bool store[kCols], keep[kCols], xlo[kCols], xhi[kCols], ylo[kCols], yhi[kCols];
  ptrdiff_t ld[kCols]; /* load offsets of the columns (clamped into the allocation) */
  bool xface = false;  /* some column of the tile is beside a physical x face */
#pragma unroll
  for (int q = 0; q < kCols; ++q) {
    const int j = q * kBX + tx, x = x0 + j;
    store[q] = j >= MS && j < kW - MS && x < a.rx1;
    xlo[q] = a.face[0].on && x == a.bx0;
    xhi[q] = a.face[1].on && x == a.bx1 - 1;
    keep[q] = !((a.face[0].on && x == a.bx0 - 1) || (a.face[1].on && x == a.bx1));
    /* the y faces' values cover the column */
    ylo[q] = x >= a.face[2].a0 && x < a.face[2].a0 + a.face[2].n;
    yhi[q] = x >= a.face[3].a0 && x < a.face[3].a0 + a.face[3].n;
    const int xl = x < a.gx0 ? a.gx0 : (x >= a.gx1 ? a.gx1 - 1 : x);
    ld[q] = a.origin + (ptrdiff_t)(xl - a.gx0);
    xface = xface || xlo[q] || xhi[q];
  }
  xface = __syncthreads_or(xface);
  const int slo = cy0 > a.ry0 ? cy0 : a.ry0; /* the rows level MS stores */
  const int shi = cy1;
  const int ylo_row = a.face[2].on ? a.by0 : INT_MIN, yhi_row = a.face[3].on ? a.by1 : INT_MIN;
  const int xr0 = a.face[0].on ? a.face[0].a0 : a.face[1].a0; /* rows the x faces' values cover */
  const int xr1 = xr0 + (a.face[0].on ? a.face[0].n : a.face[1].n);

  /* the input rows in flight: ahead[r] holds row y + r while row y is taken */
  T ahead[kAhead][kCols][NC];
  auto load_row = [&](int y, T(&dst)[kCols][NC]) {
    const int yl = y < a.gy0 ? a.gy0 : (y >= a.gy1 ? a.gy1 - 1 : y);
    const ptrdiff_t oy = (ptrdiff_t)(yl - a.gy0) * a.sy;
#pragma unroll
    for (int q = 0; q < kCols; ++q)
#pragma unroll
      for (int c = 0; c < NC; ++c) dst[q][c] = a.in[ld[q] + oy + c * a.sc];
  };
#pragma unroll
  for (int r = 0; r < kAhead; ++r) load_row(y0 + r, ahead[r]);

  /* reg[l][q][c][k]: component c of column q at level l, the row r with (r - y0) mod 3 = k */
  V reg[MS][kCols][NC][3];
  V base3[kCols][NC]; /* SSP-RK3 and RK4: level 0's row y - 3 */
  V acc[kCols][NC][3], acc4[kCols][NC]; /* RK4: the running sums, as reg; row y - 4's */
#pragma unroll
  for (int l = 0; l < MS; ++l)
#pragma unroll
    for (int q = 0; q < kCols; ++q)
#pragma unroll
      for (int c = 0; c < NC; ++c) reg[l][q][c][0] = reg[l][q][c][1] = reg[l][q][c][2] = (V)0;
#pragma unroll
  for (int q = 0; q < kCols; ++q)
#pragma unroll
    for (int c = 0; c < NC; ++c)
      base3[q][c] = acc4[q][c] = acc[q][c][0] = acc[q][c][1] = acc[q][c][2] = (V)0;

  /* One row of the pipeline: row y in, level l's row y - l computed; R = (y - y0) mod 3. CK:
   * whether its levels may store outside the chunk's rows or meet a y face's ghost row; the
   * rows in between, most of a chunk, leave the tests out (as the 3D kernel's planes do). */
  auto row = [&](auto rc, auto ck, int y) {
    constexpr int R = decltype(rc)::value;
    constexpr bool CK = decltype(ck)::value;
#pragma unroll
    for (int q = 0; q < kCols; ++q)
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        const V v = ahead[0][q][c];
#pragma unroll
        for (int r = 0; r + 1 < kAhead; ++r) ahead[r][q][c] = ahead[r + 1][q][c];
        if (S >= 3) base3[q][c] = reg[0][q][c][R];
        if (S == 4) acc4[q][c] = acc[q][c][slot<R>(-1)];
        reg[0][q][c][R] = v;
        sh[0][R][c][q * kBX + tx + 1] = v;
      }
    load_row(y + kAhead, ahead[kAhead - 1]);
#pragma unroll
    for (int l = 1; l <= MS; ++l) {
      const int yr = y - l;
      const int lo = slot<R>(-l - 1), mid = slot<R>(-l), hi = slot<R>(-l + 1);
      /* the source's row, clamped as the loads are: a tile's and a chunk's outer cells, never
       * stored, reach past the allocation where the ghosts are only as deep as needed */
      const ptrdiff_t src_row =
          SRC ? (ptrdiff_t)((yr < a.gy0 ? a.gy0 : (yr >= a.gy1 ? a.gy1 - 1 : yr)) - a.gy0) * a.sy
              : 0;
#pragma unroll
      for (int q = 0; q < kCols; ++q) {
        const int s = q * kBX + tx + 1; /* the column's place in a shared row */
        double w[NC * 9];
#pragma unroll
        for (int c = 0; c < NC; ++c) {
          double *wp = w + c * 9 + 4;
          wp[0] = (double)reg[l - 1][q][c][mid];
          wp[-3] = (double)reg[l - 1][q][c][lo];
          wp[3] = (double)reg[l - 1][q][c][hi];
          wp[-1] = (double)sh[l - 1][mid][c][s - 1];
          wp[1] = (double)sh[l - 1][mid][c][s + 1];
        }
        double r[TSR_MAX_COMP] = {0};
        tsr_model_rhs(M, w + 4, &kc, r);
        T v[NC];
#pragma unroll
        for (int c = 0; c < NC; ++c) {
          const double rc = SRC ? r[c] + (double)__ldg(a.src + ld[q] + src_row + c * a.sc)
                                : r[c];
          v[c] = level_update<S, T>(l, a.dt, reg[0][q][c][mid], base3[q][c], &acc[q][c][mid],
                                 acc4[q][c], w[c * 9 + 4], rc);
        }
        if (l == MS) {
          if (store[q] && (!CK || (yr >= slo && yr < shi))) {
            const ptrdiff_t o = at(a, x0 + s - 1, yr);
#pragma unroll
            for (int c = 0; c < NC; ++c) a.out[o + c * a.sc] = v[c];
          }
          continue;
        }
        const int x = x0 + s - 1;
        /* the ghost row beyond the high y face: from this column's row below it */
        if (CK && yr == yhi_row && yhi[q]) {
#pragma unroll
          for (int c = 0; c < NC; ++c)
            v[c] = (T)tsr_ghost_value(a.face[3].type, face_value(a.face[3], c, x),
                                      (double)reg[l][q][c][lo],
                                      1, a.face[3].h);
        }
#pragma unroll
        for (int c = 0; c < NC; ++c) {
          const V vc = v[c];
          reg[l][q][c][mid] = vc;
          if (keep[q]) sh[l][mid][c][s] = vc;
        }
        /* the ghost row below the low y face, beside its first row */
        if (CK && yr == ylo_row && ylo[q]) {
#pragma unroll
          for (int c = 0; c < NC; ++c)
            reg[l][q][c][lo] = (T)tsr_ghost_value(a.face[2].type, face_value(a.face[2], c, x),
                                                  (double)v[c], 1, a.face[2].h);
        }
        /* the ghost columns beside the x faces' first cells */
        if (xface && yr >= xr0 && yr < xr1) {
#pragma unroll
          for (int c = 0; c < NC; ++c) {
            if (xlo[q])
              sh[l][mid][c][s - 1] = (T)tsr_ghost_value(
                  a.face[0].type, face_value(a.face[0], c, yr), (double)v[c], 1, a.face[0].h);
            if (xhi[q])
              sh[l][mid][c][s + 1] = (T)tsr_ghost_value(
                  a.face[1].type, face_value(a.face[1], c, yr), (double)v[c], 1, a.face[1].h);
          }
        }
      }
    }
    /* every level reads only rows earlier iterations wrote, into other slots: one barrier a
     * row orders them */
    __syncthreads();
  };

  using R0 = std::integral_constant<int, 0>;
  using R1 = std::integral_constant<int, 1>;
  using R2 = std::integral_constant<int, 2>;
  using ON = std::integral_constant<bool, true>;
  using OFF = std::integral_constant<bool, false>;
#pragma unroll 1
  for (int y = y0; y < y1; y += 3) {
    /* level MS stores rows y - MS .. y + 2 - MS, inside the chunk from y0 + 2 MS on (slo is
     * cy0: a chunk starts inside the region); levels 1 .. MS - 1, which refill the y faces'
     * ghosts, reach rows y - MS + 1 .. y + 1 */
    const bool fast = kFast2 && y >= y0 + 2 * MS && y + 2 < y1 &&
                      (ylo_row < y - MS + 1 || ylo_row > y + 1) &&
                      (yhi_row < y - MS + 1 || yhi_row > y + 1);
    if (fast) {
      row(R0{}, OFF{}, y);
      row(R1{}, OFF{}, y + 1);
      row(R2{}, OFF{}, y + 2);
    } else {
      row(R0{}, ON{}, y);
      if (y + 1 < y1) row(R1{}, ON{}, y + 1);
      if (y + 2 < y1) row(R2{}, ON{}, y + 2);
    }
  }
}

/* The kernel's arguments for a pass over region rg (host code; tsr_steps_cuda has checked
 * them), and its grid: tiles along x, chunks along y. */
template <typename T>
tsr_err steps2_fill(steps_args<T> *ap, const tsr_stage_desc *s, const tsr_box *rg,
                    const tsr_steps_bc *bc, const tsr_field *in, const tsr_field *src,
                    tsr_field *out) {
  steps_args<T> &a = *ap;
  a.in = static_cast<const T *>(in->data);
  a.src = src ? static_cast<const T *>(src->data) : nullptr;
  a.out = static_cast<T *>(out->data);
  a.coef = s->coef;
  a.coef.dt = s->dt;
  a.dt = s->dt;
  a.sy = in->sy;
  a.sc = in->scomp;
  a.gx0 = in->gbox.lo[0];
  a.gx1 = in->gbox.hi[0];
  a.gy0 = in->gbox.lo[1];
  a.gy1 = in->gbox.hi[1];
  a.rx0 = rg->lo[0];
  a.rx1 = rg->hi[0];
  a.ry0 = rg->lo[1];
  a.ry1 = rg->hi[1];
  a.bx0 = in->box.lo[0];
  a.bx1 = in->box.hi[0];
  a.by0 = in->box.lo[1];
  a.by1 = in->box.hi[1];
  a.origin = tsr_field_at(in, 0, a.gx0, a.gy0, in->box.lo[2]);
  for (int f = 0; f < 4; ++f) {
    a.face[f] = face_arg{0, 0, 0.0, nullptr, 0, 0};
    a.grow[f] = 1;
  }
  for (int i = 0; bc && i < bc->nface; ++i) {
    const tsr_bc_face *fc = &bc->face[i];
    if (fc->axis > 1) continue;
    const int f = 2 * fc->axis + fc->side;
    /* the tangential axis in 2D: y for the x faces, x for the y faces */
    const int t = fc->axis == 0 ? 1 : 0;
    const bool first = fc->t1 == t; /* the tangential cells run along t1 (else t2) */
    a.face[f].on = 1;
    a.face[f].type = fc->type;
    a.face[f].h = fc->h;
    a.face[f].val = bc->val[i];
    a.face[f].a0 = in->box.lo[t] + (first ? fc->o1 : fc->o2);
    a.face[f].n = fc->n1 * fc->n2;
    a.grow[f] = 0;
    TSR_CHECK(first ? fc->n2 == 1 : fc->n1 == 1, TSR_ERR_STATE,
              "tsr_steps_cuda: a 2D face of %d x %d cells", fc->n1, fc->n2);
  }
  return TSR_OK;
}

inline dim3 steps2_grid(const tsr_box *rg, int m, int ncomp) {
  const int wout = (ncomp == 1 ? kCols1 : 1) * kBX - 2 * m; /* cols_of */
  return dim3((unsigned)((tsr_box_len(rg, 0) + wout - 1) / wout),
              (unsigned)((tsr_box_len(rg, 1) + kChunk - 1) / kChunk), 1);
}
