/* Several explicit steps in one pass over memory (temporal blocking; time.fuse): forward
 * Euler's, and the stages of SSP-RK2, SSP-RK3 and RK4 steps.
 *
 * A fused block (time.fuse: s) exchanges ghosts s steps deep once and then updates boxes that
 * shrink by the stencil radius per stage (solver/explicit.c). Done one stage at a time, each
 * of those stages still reads and writes every cell in memory once (the SSP stages after a
 * step's first read its base too). tsr_steps_* take m steps in one pass: a tile of cells is
 * read once, advanced m steps' stages on chip (shared memory and registers on GPUs, a
 * cache-sized buffer on CPUs) and only the last stage is written. Every
 * intermediate value is computed by the same per-cell code (tsr_model_rhs, tsr_stage_update)
 * from the same inputs as the stage-by-stage path computes it, so the result is bitwise the
 * same (DESIGN.md principle 2).
 *
 * Physical boundaries: between two stages the ghost layers beyond the box's faces on the
 * physical boundary are refilled on chip from the stage's own values, with
 * tsr_ghost_value and the face's values (which must not depend on t: the driver falls back to
 * stage-by-stage steps where a face value or the source does). */
#ifndef TSR_STEPS_H
#define TSR_STEPS_H

#include "kernels/field.h"
#include "kernels/models/boundary_cell.h"
#include "kernels/stage.h"

#ifdef TSR_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The schemes a pass takes, named by their last stage's kind (the tsr_stage_desc.kind a pass
 * is given): forward Euler (TSR_STAGE_EULER, one stage a step), SSP-RK2 (TSR_STAGE_SSP2_2,
 * two), SSP-RK3 (TSR_STAGE_SSP3_3, three) and RK4 (TSR_STAGE_RK4_4, four). A pass of m steps
 * of S stages computes m S levels: level l (1 .. m S) is stage (l - 1) mod S of its step, with
 * that stage's kind (tsr_steps_kind); it reads level l - 1's stencil and, where the kind reads
 * one (tsr_stage_uses_base), the step's base, level l - 1 - (l - 1) mod S, at the same cell
 * (level 0 is `in`), exactly as the stage-by-stage path reads its slots (solver/integrate.c).
 * RK4's running sum (acc) is a value a cell, written by a step's first stage, updated by its
 * second and third and read by its fourth, rounded to the field's type after each as the
 * stage-by-stage path stores it in its acc field. The single stages of other schemes are not
 * taken. */
static inline int tsr_steps_stages(tsr_stage_kind last) {
  return last == TSR_STAGE_EULER    ? 1
         : last == TSR_STAGE_SSP2_2 ? 2
         : last == TSR_STAGE_SSP3_3 ? 3
         : last == TSR_STAGE_RK4_4  ? 4
                                    : 0;
}
/* The kind of stage st (0 .. S - 1) of a step of S stages (tsr_steps_stages); the GPU
 * kernels call it too, with constants. */
TSR_HD static inline tsr_stage_kind tsr_steps_kind(int S, int st) {
  if (S == 4) return (tsr_stage_kind)(TSR_STAGE_RK4_1 + st);
  if (st == 0) return TSR_STAGE_EULER;
  if (S == 2) return TSR_STAGE_SSP2_2;
  return st == 1 ? TSR_STAGE_SSP3_2 : TSR_STAGE_SSP3_3;
}

/* The most levels (steps x stages) one call takes. */
#define TSR_STEPS_MAX 8

/* The physical faces of a field's box: tsr_bc_face as solver/boundary.c fills it (ghost
 * layers beyond face `axis`/`side` of the field's box, tangential cells from the box's lo +
 * (o1, o2), n1 x n2 of them) with its values val (ncomp x n2 x n1, n1 fastest; host memory
 * for tsr_steps_host, device memory for tsr_steps_cuda). */
typedef struct {
  int nface;
  tsr_bc_face face[6];
  const double *val[6];
} tsr_steps_bc;

/* m steps of the scheme that ends with stage kind s->kind (tsr_steps_stages: S stages a step,
 * m S levels, at most TSR_STEPS_MAX) from in into out over region: afterwards out's cells in
 * region hold what those m S stages give stage by stage (tsr_stage_host with the physical
 * ghosts filled before each, base the step's first input), where level l (1 .. m S) updates
 * region grown by (m S - l) * radius on every side that is not one of bc's faces. in must hold
 * valid values over region grown by m S * radius on those sides (ghosts a halo exchange
 * filled) and valid ghost layers beyond bc's faces (the boundary's fill for the first stage).
 * src (NULL: none) is added at every stage, the same values each, and must cover the cells of
 * every level. in and out share geometry and precision and must not alias; only region's
 * cells of out are written. Host memory; OpenMP threads inside. Errors: TSR_ERR_STATE (a kind
 * no pass takes, m S out of range, in == out, fields that do not fit: tsr_steps_fits),
 * TSR_ERR_MEMORY (the tiles' buffers: a few cache's worth a thread). The region's sides on
 * bc's faces lie on the box's faces, and each face's values cover the tangential cells of the
 * first level's cells. */
/* Whether fields meet tsr_steps_*'s contract for a pass of `levels` levels (m S) over region:
 * in's allocation covers region grown by levels * radius on every side that is not one of
 * bc's faces and by radius beyond the faces (the ghost layers the first level reads), and src
 * (NULL: none) and out have in's geometry (the kernels index them with in's strides). Where
 * nothing is exchanged (every side a face) a pass of any length needs only the boundary's
 * ghosts. */
int tsr_steps_fits(int levels, int radius, const tsr_box *region, const tsr_steps_bc *bc,
                   const tsr_field *in, const tsr_field *src, const tsr_field *out);

tsr_err tsr_steps_host(const tsr_stage_desc *s, int m, int radius, const tsr_box *region,
                       const tsr_steps_bc *bc, const tsr_field *in, const tsr_field *src,
                       tsr_field *out);

/* Tile shape of tsr_steps_host, for the tests and benchmarks that tune it: cells per tile
 * along x, y, z for later calls in this process (NULL or a 0 entry: the default along that
 * axis, kernels/steps_host.c says which). A tile is what one thread advances the m steps at
 * once, before each step's halo of m * radius cells; an axis is split into equal tiles at most
 * this long. 3D tiles are columns of the whole z range (z is ignored). Not thread-safe: call
 * it between steps. */
void tsr_steps_host_set_tile(const int tile[3]);

#ifdef TSR_HAVE_CUDA
/* As tsr_steps_host, for device fields (2D or 3D), launched on stream (asynchronous); m is
 * 1, 3 or 5 steps of forward Euler, 1 of SSP-RK2, SSP-RK3 or RK4. Errors: TSR_ERR_STATE (host
 * fields, another m or kind, a model without an explicit stage, a radius other than 1, a 3D
 * pass that does not fit the tile or the shared memory of the launch shape compiled:
 * kernels/steps3_cuda.cuh), TSR_ERR_CUDA (launch). */
tsr_err tsr_steps_cuda(const tsr_stage_desc *s, int m, int radius, const tsr_box *region,
                       const tsr_steps_bc *bc, const tsr_field *in, const tsr_field *src,
                       tsr_field *out, cudaStream_t stream);

/* The most steps a pass of tsr_steps_cuda should take for this dimension, precision, model
 * (tsr_model_id) and scheme (its stages a step, tsr_steps_stages): 0 where passes do not pay
 * (the driver then steps stage by stage; kernels/steps_cuda.cu says which and why), or where
 * a 3D pass's shared memory exceeds the current GPU's (asked of the runtime; without a GPU
 * the counts are as for an H100).
 * tsr_steps_cuda takes the counts above whatever this says; the driver asks for odd counts up
 * to this one. */
int tsr_steps_cuda_max(int dim, tsr_prec prec, int model, int stages);
#endif

#ifdef __cplusplus
}
#endif

#endif
