/* The boundary's ghost fill as device code, shared by kernels/boundary.cu (its launches) and
 * kernels/block_steps.cu (steps of a small grid in one launch, which fills the ghosts itself):
 * one source for the per-point fill, so both give the bits of tsr_bc_apply_cuda. Internal to
 * kernels/; included inside an anonymous namespace. */
#ifndef TSR_KERNELS_BOUNDARY_CUDA_CUH
#define TSR_KERNELS_BOUNDARY_CUDA_CUH

struct faces_arg {
  tsr_bc_face fc[TSR_BC_MAX_FACES];
  const double *vals[TSR_BC_MAX_FACES];
  unsigned start[TSR_BC_MAX_FACES + 1]; /* first thread of each face; start[n] = all threads */
  int n;
};

/* Thread t's face point and component of u (every field of a batch runs the same). A copy of
 * some layers of the field (kernels/block_steps.cu) passes cut >= 0: u then holds the layers
 * [wlo, whi) along axis cut, from the field's offset base on, its components sc apart, and
 * only the points whose ghost and mirror lie in them are filled. */
template <typename T>
__device__ __forceinline__ void fill(const faces_arg &fa, unsigned t, T *__restrict__ u,
                                     const tsr_box &box, const tsr_box &gbox, ptrdiff_t sy,
                                     ptrdiff_t sz, ptrdiff_t sc, int part, int cut = -1,
                                     int wlo = 0, int whi = 0, ptrdiff_t base = 0) {
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
    if (cut >= 0 && (gi[cut] < wlo || gi[cut] >= whi || mi[cut] < wlo || mi[cut] >= whi)) continue;
    ptrdiff_t go = q * sc + (gi[2] - gbox.lo[2]) * sz + (gi[1] - gbox.lo[1]) * sy + (gi[0] - gbox.lo[0]);
    ptrdiff_t mo = q * sc + (mi[2] - gbox.lo[2]) * sz + (mi[1] - gbox.lo[1]) * sy + (mi[0] - gbox.lo[0]);
    u[go - base] = (T)tsr_ghost_value(fc.type, g, (double)u[mo - base], l, fc.h);
  }
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

#endif
