/* Case expressions on the device: the canonical C text of each expression (io/expr.h,
 * tsr_expr_to_c) compiled at start-up with NVRTC into one library of kernels, so that
 * time-dependent boundary values, sources and exact solutions are evaluated on the GPU with
 * no host round trip. Compiled with -fmad=false (DESIGN.md principle 2): + - * / and the
 * coordinates are bitwise the host's; the transcendental functions are CUDA's, which agree
 * with libm to a few ulp, not bit for bit.
 *
 * Loaded with the runtime's library management (cudaLibraryLoadData), so tessera links only
 * libcudart and libnvrtc, never the driver library. Only built with TSR_HAVE_CUDA. */
#ifndef TSR_EXPR_CUDA_H
#define TSR_EXPR_CUDA_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "io/error.h"
#include "io/expr.h"
#include "kernels/field.h"
#include "kernels/models/boundary_cell.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsr_expr_cuda tsr_expr_cuda;

/* The grid's geometry, as the host's coordinates use it (solver/boundary.c,
 * tsr_cell_center): cell centre i on axis d < dim is lo[d] + ((double)i + 0.5) * h[d];
 * faces sit at lo[d] or hi[d] exactly; axes d >= dim have coordinate 0. h must be computed
 * on the host as (hi - lo) / cells (tsr_expr_grid_make) so the device gets the same bits. */
typedef struct {
  int dim;
  double lo[3], hi[3], h[3];
  int wrap[3];  /* the cells of a periodic axis (indices are taken modulo them first, as
                   tsr_cell_center does), 0 on the others */
} tsr_expr_grid;

/* The grid of a case's lo, hi and cells (arrays of 3; cells 1 on unused axes); periodic: flags
 * per axis, or NULL for none. */
static inline tsr_expr_grid tsr_expr_grid_make(int dim, const double lo[3], const double hi[3],
                                               const int cells[3], const int *periodic) {
  tsr_expr_grid g = {.dim = dim};
  for (int d = 0; d < 3; ++d) {
    g.lo[d] = lo[d];
    g.hi[d] = hi[d];
    g.h[d] = (hi[d] - lo[d]) / cells[d]; /* tsr_cell_center's own expression */
    g.wrap[d] = periodic && d < dim && periodic[d] ? cells[d] : 0;
  }
  return g;
}

/* Writes into *src (owned by the caller: free) the CUDA C++ source of expressions e[0..n-1]:
 * one `__device__ double tsr_e<i>(double x, double y, double z, double t)` each returning the
 * canonical C text, the params it uses declared in it as `const double tsr_p_NAME =
 * <%.17g literal>;` (prefixed so that a param named like a CUDA function or a C++ keyword,
 * y0, norm, new, cannot clash), and the extern "C" kernels tsr_expr_cells, tsr_expr_face and
 * tsr_expr_points. A NULL e[i] evaluates to 0. env: the params e was compiled with (may be
 * NULL). Pure; needs no GPU. Errors: TSR_ERR_MEMORY, TSR_ERR_INTERNAL (bad arguments). */
tsr_err tsr_expr_cuda_source(int n, const tsr_expr *const *e, const tsr_expr_env *env,
                             char **src);

/* Generates the source of e[0..n-1], compiles it with NVRTC for the current device (a cubin
 * for its compute capability; PTX for the newest older architecture this NVRTC knows when it
 * does not know the device's) and loads it (cudaLibraryLoadData). Synchronous; not
 * collective. *m owned by the caller (tsr_expr_cuda_destroy); NULL on error. The expressions
 * and env are not kept. Errors: TSR_ERR_CUDA (no device, NVRTC or the runtime failed),
 * TSR_ERR_INTERNAL (NVRTC refused the source, with its log: a bug, since io/expr validated
 * it), TSR_ERR_UNSUPPORTED (a device older than every architecture NVRTC knows),
 * TSR_ERR_MEMORY. */
tsr_err tsr_expr_cuda_build(int n, const tsr_expr *const *e, const tsr_expr_env *env,
                            tsr_expr_cuda **m);

/* Evaluates expression i at the centres of the cells of region (NULL: f's owned box; else a
 * box inside f's allocation) of component comp of the device field f at time t, or at the time
 * *tp where tp (device memory) is not NULL, read when the kernel runs (what a replayed CUDA
 * graph needs). Asynchronous on stream s: returns after the launch, the values are there for
 * later work on s. Errors: TSR_ERR_STATE (f in host memory), TSR_ERR_INTERNAL (i or comp out
 * of range, region outside f), TSR_ERR_CUDA (launch). */
tsr_err tsr_expr_cuda_eval_cells(tsr_expr_cuda *m, int i, const tsr_expr_grid *g, double t,
                                 const double *tp, tsr_field *f, int comp, const tsr_box *region,
                                 cudaStream_t s);

/* Evaluates, for each component q < ncomp, expression expr_per_comp[q] (host array; -1
 * gives 0) at the face points of face, a face of box (global cell indices): the face
 * coordinate is g's lo or hi on face->axis, the tangential ones the centres of the face's
 * cells (from box's lo + face's o1, o2). Writes dvals
 * (device memory, ncomp x n2 x n1, n1 fastest: what tsr_bc_apply_cuda reads, and the layout
 * of tsr_bc_values). The time is t, or *tp as for tsr_expr_cuda_eval_cells. Asynchronous
 * on s. Errors: TSR_ERR_INTERNAL (ncomp above TSR_MAX_COMP or an index out of range),
 * TSR_ERR_CUDA (launch). */
tsr_err tsr_expr_cuda_eval_face(tsr_expr_cuda *m, const int *expr_per_comp, int ncomp,
                                const tsr_bc_face *face, const tsr_box *box,
                                const tsr_expr_grid *g, double t, const double *tp, double *dvals,
                                cudaStream_t s);

/* Evaluates expression i at n points (dx, dy, dz: device arrays of n; dz may be NULL for 0)
 * into dout (device, n). For tests and scattered points. Asynchronous on s. Errors:
 * TSR_ERR_INTERNAL (i out of range), TSR_ERR_CUDA (launch). */
tsr_err tsr_expr_cuda_eval_points(tsr_expr_cuda *m, int i, size_t n, const double *dx,
                                  const double *dy, const double *dz, double t, double *dout,
                                  cudaStream_t s);

/* Unloads the library and frees; sets *m to NULL; accepts NULL. Kernels already launched from
 * it must have finished (synchronise their streams first). */
void tsr_expr_cuda_destroy(tsr_expr_cuda **m);

#ifdef __cplusplus
}
#endif

#endif
