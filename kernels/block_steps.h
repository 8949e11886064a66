/* Whole time steps of a small grid in one launch of a cluster of thread blocks (parareal's
 * coarse grid, and its slices' fine solves, on a GPU).
 *
 * A grid of a few thousand cells is bound by kernel launches, not by its cells: parareal's
 * coarse steps of a 64^2 grid took 4.7 us each as a boundary fill and a stage launch in a CUDA
 * graph (one H100, bench/README.md session 24). Here n steps of every stage run in one launch
 * of a cluster of up to 16 blocks (one SM each), each holding its strip of the fields in its
 * shared memory, with a barrier where the launches had their boundaries: per stage the
 * physical ghosts of the stage's input (the same per-point fill as tsr_bc_apply_cuda,
 * kernels/boundary_cuda.cuh), a barrier, every cell of the box (the same per-cell code as
 * tsr_stage_cuda: tsr_model_rhs and tsr_stage_update in the same order), a barrier. The bits
 * are those of the launches (DESIGN.md principle 2). A grid up to 256^2 in double precision
 * (three fields) fits 8 blocks' shared memory, so its fields cross DRAM once a launch, not
 * once a stage; several grids (parareal's slices) go in one launch, a cluster each.
 * kernels/block_steps.cu says how the blocks share the grid. */
#ifndef TSR_KERNELS_BLOCK_STEPS_H
#define TSR_KERNELS_BLOCK_STEPS_H

#include <stdint.h>

#include "kernels/boundary.h"
#include "kernels/stage.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A scheme's stages on three slots (solver/integrate.h's tsr_scheme_plan, which kernels/ does
 * not see): stage s reads slot in[s] (its base is slot 0, u^n), writes slot out[s], with kind
 * kind[s]; after the last stage slots 0 and `result` swap. */
typedef struct {
  int nstage;
  int kind[4], in[4], out[4];
  int result;
} tsr_block_scheme;

/* One grid's steps in a batch: its slots (as tsr_block_steps_cuda takes them), RK4's
 * accumulator, its source, and its step count. */
typedef struct {
  tsr_field *slot[3];
  tsr_field *acc;
  const tsr_field *src;
  int64_t n;
} tsr_block_job;

/* How a launch ran: blocks a cluster (a job's), 0 where one block stepped the fields in place
 * in global memory; the clusters the GPU holds at once (the jobs that run side by side; more
 * wait for a cluster to finish); threads a block. */
typedef struct {
  int blocks, resident, threads;
} tsr_block_shape;

#ifdef TSR_HAVE_CUDA
/* Whether the current device runs the block steps in clusters of several blocks: the build's
 * code for it is sm_90's or later. A build for an older GPU (where it runs, or on a newer one
 * from its PTX) steps a grid in one block, in its shared memory where the grid fits. */
int tsr_block_clusters(void);

/* Whether tsr_block_steps_cuda runs these fields (those sc's stages name, and acc for RK4) in
 * the shared memory of a cluster of blocks on the current device: a strip of each for up to
 * 16 blocks (1 without clusters) fits one block's shared memory. Where they do not fit, one
 * block steps them in place in global memory, which is slower than the launches past a few
 * thousand cells (one H100: 64^2 3.2 us a step against 4.7 for the launches, 128^2 slower
 * than them), so parareal takes it by default only where this holds. */
int tsr_block_steps_staged(const tsr_block_scheme *sc, tsr_field *const slot[3], tsr_field *acc);

/* n steps of scheme sc on the fields slot[0 .. 2] (slot[0]: u^n; slots no stage names may be
 * NULL), RK4's accumulator acc (NULL unless a stage needs it), the source src (NULL: none;
 * the same values every step: nothing here depends on t), the physical faces faces[0 .. nface)
 * with values vals (device memory, as tsr_bc_apply_cuda takes them, filled over TSR_BC_WHOLE
 * before every stage), over the whole owned box of slot[0], which nothing is exchanged into
 * (one rank, no periodic axis: the caller's contract). Stage time steps s->dt; s->kind is
 * ignored. One launch on stream (asynchronous). Afterwards u^{n} is in slot[0]
 * when n is even, in slot[sc->result] when odd (the slots swap every step, as the driver's
 * do). Errors: TSR_ERR_STATE (host fields, fields of other shapes or precisions, a stage
 * reading what it writes, a missing field, a model without an explicit stage, more than
 * TSR_BC_MAX_FACES faces), TSR_ERR_CUDA. */
tsr_err tsr_block_steps_cuda(const tsr_stage_desc *s, const tsr_block_scheme *sc,
                             tsr_field *const slot[3], tsr_field *acc, const tsr_field *src,
                             int nface, const tsr_bc_face *const *faces,
                             const double *const *vals, int64_t n, cudaStream_t stream);

/* As tsr_block_steps_cuda for the grids jobs[0 .. njob), each jobs[j].n steps (the counts may
 * differ) on its own fields, all of the first job's slot 0's shape and precision, a source in
 * every job or in none; the same stage, scheme and faces for all (values that do not depend
 * on the grid's fields: the same box and expressions). A cluster a job, side by side, in as
 * few launches as the kernel's parameters allow (32 jobs a launch); *shape (NULL: not asked)
 * how. Errors: as tsr_block_steps_cuda's. */
tsr_err tsr_block_steps_cuda_batch(const tsr_stage_desc *s, const tsr_block_scheme *sc,
                                   int njob, const tsr_block_job *jobs, int nface,
                                   const tsr_bc_face *const *faces, const double *const *vals,
                                   cudaStream_t stream, tsr_block_shape *shape);
#endif

#ifdef __cplusplus
}
#endif

#endif
