/* Migration: moving the owned cells of fields from an old layout to a new one (a rebalance).
 *
 * A plan lists, for one rank, each peer with the cells to send (its old box ∩ the peer's new
 * box) and to receive (its new box ∩ the peer's old box), as halo plans do; the cells that
 * stay (old ∩ new of the rank itself) are copied locally. Boxes are disjoint and each rank owns
 * one, so a pair exchanges at most one box each way, packed per component, x fastest, so both
 * sides agree on the order without talking. Ghost cells are not moved: the new halo plan's
 * first exchange fills them. */
#ifndef TSR_MIGRATE_H
#define TSR_MIGRATE_H

#include <mpi.h>
#include <stdint.h>

#include "decomp/layout.h"
#include "kernels/field.h"

typedef struct {
  int peer;     /* rank of the peer (never the plan's own rank) */
  tsr_box box;  /* cells that travel, global indices */
} tsr_migrate_peer;

typedef struct {
  int rank;
  tsr_box old_box, new_box; /* this rank's box before and after (empty when it has none) */
  tsr_box keep;             /* old_box ∩ new_box: copied locally (may be empty) */
  int nsend, nrecv;         /* peers, sorted by rank */
  tsr_migrate_peer *send;   /* owned by the plan */
  tsr_migrate_peer *recv;   /* owned by the plan */
  int64_t send_cells, recv_cells;
} tsr_migrate_plan;

/* Builds rank's plan from the two layouts of the same global grid (pure: the same on every
 * rank). Free with tsr_migrate_plan_free. Errors: TSR_ERR_INPUT (layouts of different grids or
 * rank counts), TSR_ERR_MEMORY. */
tsr_err tsr_migrate_plan_build(const tsr_layout *old_layout, const tsr_layout *new_layout,
                               int rank, tsr_migrate_plan *plan);

/* Releases the plan's arrays; safe on a zeroed plan. */
void tsr_migrate_plan_free(tsr_migrate_plan *plan);

/* Moves the owned cells of every component of src (a host field on the plan's old box) into
 * *dst, a new zeroed host field on the new box with src's ghost width, components and
 * precision (destroy with tsr_field_destroy; src is left as it was). MPI point-to-point, one
 * message per peer and direction. Collective: every rank of comm calls it with its plan of the
 * same two layouts. Errors: TSR_ERR_STATE (src does not match the plan or is not on the host),
 * TSR_ERR_UNSUPPORTED (a message above MPI's int count), TSR_ERR_MEMORY, TSR_ERR_MPI; *dst is
 * NULL after an error. */
tsr_err tsr_migrate_field(const tsr_migrate_plan *plan, MPI_Comm comm, const tsr_field *src,
                          tsr_field **dst);

/* As tsr_migrate_field into dst, a host field the caller made on the plan's new box with src's
 * ghost width, components and precision (tsr_field_reshape of a spare field: no allocation);
 * dst is zeroed first, so it ends as tsr_migrate_field's new field would. dst may not share
 * memory with src. Errors: as tsr_migrate_field (TSR_ERR_STATE also for a dst of another
 * shape); dst's values are undefined after an error. */
tsr_err tsr_migrate_field_into(const tsr_migrate_plan *plan, MPI_Comm comm, const tsr_field *src,
                               tsr_field *dst);

#ifdef TSR_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <nccl.h>

/* As tsr_migrate_field for a device field, on the current device (nccl's): the pack kernels
 * of the halo exchange, one NCCL group of sends and receives on stream, then the unpack, and
 * the host waits for stream (polling NCCL for asynchronous errors). Streams: the work that
 * wrote src must be on stream, the legacy default stream or a blocking stream (the host waits
 * for the legacy stream first); when it returns the new field is complete. Plan ranks are
 * ranks of nccl. Collective over nccl. Errors: as tsr_migrate_field, TSR_ERR_CUDA,
 * TSR_ERR_NCCL. */
tsr_err tsr_migrate_field_nccl(const tsr_migrate_plan *plan, ncclComm_t nccl,
                               cudaStream_t stream, const tsr_field *src, tsr_field **dst);

/* Device buffers of migrations kept from one to the next (grow-only): a migration then
 * allocates only when it moves more cells than any before it. Free with
 * tsr_migrate_bufs_free (accepts NULL, sets the handle to NULL; waits for nothing: call it
 * when no migration is in flight). */
typedef struct tsr_migrate_bufs tsr_migrate_bufs;
void tsr_migrate_bufs_free(tsr_migrate_bufs **bufs);

/* As tsr_migrate_field_nccl into dst, a device field on the plan's new box with src's ghost
 * width, components and precision (see tsr_migrate_field_into); dst ends as a new field would
 * (its ghosts zeroed, its owned cells moved). The cells that stay are copied on aux (NULL:
 * stream) while the others travel on stream; aux must be a non-blocking stream idle of other
 * work on src and dst. *bufs (NULL on the first call; bufs NULL: buffers for this call only)
 * holds the buffers for the next migration. When it returns, dst is complete and both streams
 * are idle of the migration's work. Errors: as tsr_migrate_field_nccl. */
tsr_err tsr_migrate_field_nccl_into(const tsr_migrate_plan *plan, ncclComm_t nccl,
                                    cudaStream_t stream, cudaStream_t aux, const tsr_field *src,
                                    tsr_field *dst, tsr_migrate_bufs **bufs);
#endif

#endif
