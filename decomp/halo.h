/* Halo plans and the split-phase halo exchange.
 *
 * A plan lists, for one rank, each peer with the boxes to send (owned cells, in this rank's
 * global index space) and to receive (ghost cells), periodic images included; a rank can be
 * its own peer through a periodic image. The segments of one peer are packed in order into
 * one contiguous buffer per peer and direction: for each segment, for each component, cells
 * in x-fastest order. Both sides of a pair list their segments in the same order, so the
 * sender's packed send buffer is exactly the receiver's receive buffer.
 *
 * Only ghost cells that some other box (or a periodic image) covers are received; ghost cells
 * outside the global grid on non-periodic axes are boundary cells, filled by the solver. */
#ifndef TSR_HALO_H
#define TSR_HALO_H

#include <mpi.h>
#include <stdint.h>

#include "decomp/layout.h"
#include "kernels/field.h"

typedef struct {
  int peer;           /* rank of the peer (may equal the plan's own rank) */
  int nseg;           /* number of segments in each direction */
  tsr_box *send;      /* nseg boxes of owned cells to send, in this rank's index space */
  tsr_box *recv;      /* nseg boxes of ghost cells to receive, in this rank's index space */
  int64_t send_cells; /* sum of send box cells */
  int64_t recv_cells; /* sum of recv box cells */
} tsr_halo_peer;

typedef struct {
  int rank;              /* the rank this plan is for */
  int ghost;             /* ghost width */
  tsr_box owned;         /* this rank's box */
  int npeer;             /* peers, sorted by rank */
  tsr_halo_peer *peers;  /* owned by the plan */
} tsr_halo_plan;

/* Builds rank's plan from the layout (collective over nothing: pure computation, the same on
 * every rank). The caller frees it with tsr_halo_plan_free. Errors: TSR_ERR_MEMORY;
 * TSR_ERR_INPUT when a box is thinner than the ghost width along an axis with neighbours. */
tsr_err tsr_halo_plan_build(const tsr_layout *layout, int rank, int ghost, tsr_halo_plan *plan);

/* Releases the plan's arrays; safe on a zeroed plan. */
void tsr_halo_plan_free(tsr_halo_plan *plan);

/* The exchange engine over a plan for fields of ncomp components (host backend: MPI). */
typedef struct tsr_halo tsr_halo;

/* Creates an exchange for fields with this plan's box and ghost width and ncomp components.
 * Borrows plan and comm (both must outlive the exchange); allocates the buffers once.
 * Collective: no. Destroy with tsr_halo_destroy. Errors: TSR_ERR_MEMORY. */
tsr_err tsr_halo_create(const tsr_halo_plan *plan, MPI_Comm comm, int ncomp, tsr_halo **halo);

/* Packs the field's owned cells and posts the non-blocking sends and receives; self-copies
 * (periodic images onto this rank) are done here. The field must not be written until
 * tsr_halo_end returns; the owned interior may be read. Errors: TSR_ERR_STATE when an
 * exchange is already in flight or the field does not match the plan; TSR_ERR_MPI. */
tsr_err tsr_halo_begin(tsr_halo *halo, tsr_field *field);

/* Waits for the exchange started by tsr_halo_begin on the same field and unpacks the ghost
 * cells. Errors: TSR_ERR_STATE when no exchange is in flight or the field differs;
 * TSR_ERR_MPI. */
tsr_err tsr_halo_end(tsr_halo *halo, tsr_field *field);

/* Bytes this rank sends per exchange (all peers, self-copies excluded). */
int64_t tsr_halo_bytes_sent(const tsr_halo_plan *plan, int ncomp, int elem_size);

/* Frees the buffers and sets *halo to NULL; accepts NULL. An exchange in flight is waited for. */
void tsr_halo_destroy(tsr_halo **halo);

#endif
