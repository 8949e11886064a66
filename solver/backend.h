/* Backends of the run driver: where the fields live and how a stage, the physical boundary,
 * the halo exchange, expression values and the monitors' reductions run there. The host
 * backend uses loops (OpenMP) and MPI; the CUDA backend kernels on streams and NCCL. Both call
 * the same per-cell functions (kernels/models/), so their fields agree bit for bit where the
 * case's expressions are evaluated the same way. Private to solver/. */
#ifndef TSR_BACKEND_H
#define TSR_BACKEND_H

#include <stdint.h>

#include "decomp/halo.h"
#include "decomp/migrate.h"
#include "io/error.h"
#include "io/expr.h"
#include "kernels/field.h"
#include "kernels/reduce.h"
#include "kernels/stage.h"

struct tsr_run_ctx;


typedef struct tsr_backend_ops {
  const char *name; /* "host", "cuda" */
  tsr_mem mem;      /* where its fields live */
  /* After the layout and halo plan exist: device, streams, communicators, halo exchange. */
  tsr_err (*setup)(struct tsr_run_ctx *x);
  void (*teardown)(struct tsr_run_ctx *x);
  /* Once every expression of the run is compiled (x->init_expr, src_expr, exact_expr and the
   * boundary's): whatever the backend needs to evaluate them. */
  tsr_err (*prepare)(struct tsr_run_ctx *x);
  /* Component comp of f's cells in region (NULL: the owned box; else inside x->reach) from
   * expression e (one of those) at time t. */
  tsr_err (*eval)(struct tsr_run_ctx *x, tsr_expr *e, tsr_field *f, int comp, double t,
                  const tsr_box *region);
  /* Ghost layers of the physical boundary of f at time t, over the face cells that part
   * covers (TSR_BC_WHOLE, _OWNED; _BEYOND: after halo_end, ordered before the shell stages and
   * beside the interior's, with the values of the _OWNED call at the same t before it). */
  tsr_err (*boundary)(struct tsr_run_ctx *x, tsr_field *f, double t, int part);
  /* Split-phase halo exchange of f, ordered after the work that wrote f's owned cells and
   * before any stage issued after halo_end. */
  tsr_err (*halo_begin)(struct tsr_run_ctx *x, tsr_field *f);
  tsr_err (*halo_end)(struct tsr_run_ctx *x, tsr_field *f);
  /* Another exchange of the backend's kind over plan (borrowed; fields as deep as or deeper
   * than its ghost width), for time.fuse: auto; destroyed with tsr_halo_destroy. */
  tsr_err (*halo_new)(struct tsr_run_ctx *x, const tsr_halo_plan *plan, tsr_halo **h);
  /* Optional (NULL: stage, then nothing). stage_shell: a stage over a shell slab, ordered
   * after halo_end's ghosts but free to run beside the interior's stage; join: everything
   * issued after it waits for the shell stages. The CUDA backend runs the shell on the
   * communication stream right after the unpack, so the interior kernel hides it too. */
  tsr_err (*stage_shell)(struct tsr_run_ctx *x, const tsr_stage_desc *d, const tsr_box *region,
                         const tsr_field *in, const tsr_field *base, tsr_field *acc,
                         const tsr_field *src, tsr_field *out);
  tsr_err (*join)(struct tsr_run_ctx *x);
  /* One stage over region (see tsr_stage_host). */
  tsr_err (*stage)(struct tsr_run_ctx *x, const tsr_stage_desc *d, const tsr_box *region,
                   const tsr_field *in, const tsr_field *base, tsr_field *acc,
                   const tsr_field *src, tsr_field *out);
  /* Optional (NULL: none): m forward Euler steps in one pass over memory (kernels/steps.h)
   * from in (valid over region grown by m radius on the exchanged faces, physical ghosts
   * filled by the boundary call before it, whose face values it reuses) into out over
   * region; steps_max: the most it takes for this run (0: none). */
  tsr_err (*steps)(struct tsr_run_ctx *x, const tsr_stage_desc *d, int m, const tsr_box *region,
                   const tsr_field *in, const tsr_field *src, tsr_field *out);
  int (*steps_max)(struct tsr_run_ctx *x);
  /* Owned cells of component comp of f from / to a host array (x fastest, tsr_box_cells). */
  tsr_err (*upload)(struct tsr_run_ctx *x, tsr_field *f, int comp, const double *owned);
  tsr_err (*download)(struct tsr_run_ctx *x, const tsr_field *f, int comp, double *owned);
  /* This rank's norms of component comp of u (and its error against exact, when not NULL),
   * into out[TSR_NNORM]; waits for the result. A non-finite value makes min -inf, max +inf. */
  tsr_err (*norms)(struct tsr_run_ctx *x, const tsr_field *u, const tsr_field *exact, int comp,
                   double *out);
  /* Waits for all work issued so far. */
  tsr_err (*sync)(struct tsr_run_ctx *x);
  /* Checkpoint staging (solver/ckpt_writer.c). stage_create: bytes of host memory that
   * stage_copy fills fastest (pinned on CUDA) into *host, and in *stage what the copies need
   * (their own stream); *stage is set even on failure, for stage_destroy. stage_copy: the
   * first bytes of f's whole allocation (ghosts included), one contiguous copy, ordered after
   * the work issued so far; returns when the bytes are in host memory. stage_destroy frees
   * both, accepts NULL and sets *stage to NULL. */
  tsr_err (*stage_create)(struct tsr_run_ctx *x, size_t bytes, void **stage, void **host);
  tsr_err (*stage_copy)(struct tsr_run_ctx *x, void *stage, const tsr_field *f, size_t bytes);
  void (*stage_destroy)(struct tsr_run_ctx *x, void **stage);
  /* The rebalancer (solver/run_rebalance.c). time_mark: optional (NULL: the driver times the
   * compute with the host's clock, as on CPU ranks); records the start (end 0) or the end
   * (end 1) of a timed stretch of compute on the compute stream (shell 0) or on the stream
   * that runs the shell stages (shell 1). time_read: waits for the stretches marked since the
   * last read and returns their summed seconds. */
  tsr_err (*time_mark)(struct tsr_run_ctx *x, int shell, int end);
  tsr_err (*time_read)(struct tsr_run_ctx *x, double *seconds);
  /* The work count of each owned cell of u in a stage (kernels/work.h) into host memory
   * (tsr_box_cells(&x->box) values, x fastest); u's ghosts must be valid. */
  tsr_err (*work)(struct tsr_run_ctx *x, const tsr_field *u, uint32_t *work);
  /* Moves the owned cells of src into dst, a field on the plan's new box shaped like src
   * (tsr_field_reshape of a spare one): dst ends as a new zeroed field would after the move
   * (decomp/migrate.h); collective. When it returns dst is complete. */
  tsr_err (*migrate)(struct tsr_run_ctx *x, const tsr_migrate_plan *plan,
                     const tsr_field *src, tsr_field *dst);
  /* Optional (NULL: tsr_field_zero at once): zeroes f, ordered before the next step's work and
   * free to run beside a migration; relayout waits for it. */
  tsr_err (*zero)(struct tsr_run_ctx *x, tsr_field *f);
  /* Optional (NULL: fields are not reserved ahead): the bytes free on the device, so that the
   * rebalancer keeps room in the fields for a larger box only where it fits. */
  tsr_err (*free_bytes)(struct tsr_run_ctx *x, size_t *bytes);
  /* After x->box, x->plan and x->bc changed (a migration): rebuilds the halo exchange and
   * whatever else the backend keeps per box. Collective. */
  tsr_err (*relayout)(struct tsr_run_ctx *x);
} tsr_backend_ops;

extern const tsr_backend_ops tsr_backend_host;
#ifdef TSR_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/models/boundary_cell.h"
extern const tsr_backend_ops tsr_backend_cuda;
/* For CUDA graphs of whole steps (solver/graph_cuda.c): the compute stream, where a step's
 * work starts and ends; and forgetting which time the boundary values of time-dependent faces
 * were last evaluated at, so that the next boundary call evaluates them again. */
cudaStream_t tsr_backend_cuda_stream(struct tsr_run_ctx *x);
void tsr_backend_cuda_forget_timed(struct tsr_run_ctx *x);
/* The device values of x's physical faces at time t, as the boundary call fills ghosts from
 * them (evaluated on the compute stream first where they are not yet, or depend on t): *n
 * faces into faces[] and vals[] (TSR_BC_MAX_FACES long; borrowed from x until its teardown).
 * For parareal's batched steps (solver/parareal/batch.h). */
tsr_err tsr_backend_cuda_faces(struct tsr_run_ctx *x, double t, const tsr_bc_face **faces,
                               const double **vals, int *n);
#endif

#endif
