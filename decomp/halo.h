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

/* Every rank's plan, one at a time, for a caller that needs them all (tessera check): the
 * layout is checked once and each box's possible peers are found through a grid of buckets,
 * so n ranks cost about n plans' work, not n^2 box pairs (32000 ranks took 8.8 s). The plans
 * are tsr_halo_plan_build's. The index borrows the layout. Errors as tsr_halo_plan_build. */
typedef struct tsr_halo_index tsr_halo_index;
tsr_err tsr_halo_index_create(const tsr_layout *layout, int ghost, tsr_halo_index **index);
tsr_err tsr_halo_index_plan(tsr_halo_index *index, int rank, tsr_halo_plan *plan);
void tsr_halo_index_free(tsr_halo_index **index);

/* The exchange engine over a plan for fields of ncomp components. One handle type, two
 * backends: tsr_halo_create gives the host backend (MPI point-to-point on host fields),
 * tsr_halo_create_nccl the device backend (pack kernels and NCCL on device fields). Both
 * produce bitwise the same ghosts. Misuse (a second begin, an end without begin or on another
 * field, a field that does not match the plan or lives in the other memory space) returns
 * TSR_ERR_STATE and changes nothing. A field may have deeper ghosts than the plan: the plan's
 * are filled (time.fuse: auto exchanges fields as deep as its largest fuse at every depth). */
typedef struct tsr_halo tsr_halo;

/* Creates a host (MPI) exchange for host fields with this plan's box and ghost width and
 * ncomp components. Borrows plan and comm (both must outlive the exchange); allocates the
 * buffers once. Collective: no. Streams: none. Destroy with tsr_halo_destroy.
 * Errors: TSR_ERR_MEMORY; TSR_ERR_UNSUPPORTED when a message exceeds MPI's int count. */
tsr_err tsr_halo_create(const tsr_halo_plan *plan, MPI_Comm comm, int ncomp, tsr_halo **halo);

/* Packs the field's owned cells and starts the exchange; returns without waiting for it.
 * MPI backend: posts non-blocking receives and sends; self-copies (periodic images onto
 * this rank) are done here. NCCL backend: equivalent to tsr_halo_begin_after(halo, field,
 * cudaStreamLegacy): packing waits for all work issued before the call to the legacy default
 * stream and to every blocking stream (not to streams created with cudaStreamNonBlocking;
 * use tsr_halo_begin_after for those). The host does not wait for the device.
 * The field must not be written until tsr_halo_end returns; the owned interior may be read.
 * Collective: no, but every peer must begin the matching exchange (NCCL: in the same order
 * of exchanges on every rank). Errors: TSR_ERR_STATE (misuse, see above); TSR_ERR_MPI;
 * TSR_ERR_CUDA, TSR_ERR_NCCL. Matching call: tsr_halo_end. */
tsr_err tsr_halo_begin(tsr_halo *halo, tsr_field *field);

/* Finishes the exchange started on the same field and unpacks the ghost cells; when it
 * returns, the ghosts hold the peers' values. MPI backend: waits for the messages. NCCL
 * backend: unpacks on the communication stream and waits on the host until that stream has
 * finished (polling NCCL for asynchronous errors meanwhile), so any later work on any stream
 * sees the ghosts. After an error the exchange is idle (what was in flight is abandoned).
 * Errors: TSR_ERR_STATE when no exchange is in flight or the field differs; TSR_ERR_MPI;
 * TSR_ERR_CUDA, TSR_ERR_NCCL. */
tsr_err tsr_halo_end(tsr_halo *halo, tsr_field *field);

/* Marks the exchange idle without finishing it, for an exchange whose work was recorded but
 * never ran (a CUDA graph capture that failed half-way, solver/graph.h). Accepts NULL. */
void tsr_halo_forget(tsr_halo *halo);

/* Bytes this rank sends per exchange (all peers, self-copies excluded). */
int64_t tsr_halo_bytes_sent(const tsr_halo_plan *plan, int ncomp, int elem_size);

/* Frees the buffers and sets *halo to NULL; accepts NULL. An exchange in flight is waited for
 * (MPI: its messages; NCCL: all work on the communication stream, so the peers must have
 * begun the matching exchange). */
void tsr_halo_destroy(tsr_halo **halo);

#ifdef TSR_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <nccl.h>

/* Creates a device (NCCL) exchange for device fields with this plan's box and ghost width and
 * ncomp components. Plan ranks are ranks of nccl (the rank of the plan must be this
 * communicator's rank). Borrows plan, nccl and comm_stream (all must outlive the exchange);
 * allocates per peer a device send and receive buffer and uploads the segment lists once, on
 * the current device, which must be nccl's device. All kernels and NCCL calls of the exchange
 * run on comm_stream (a non-blocking, high-priority stream is the intended choice, so that the
 * exchange overtakes interior work). Collective: no. Streams: synchronous uploads (the device
 * is idle with respect to this exchange when it returns). Destroy with tsr_halo_destroy.
 * Errors: TSR_ERR_MEMORY (host or device), TSR_ERR_CUDA, TSR_ERR_NCCL; TSR_ERR_STATE when the
 * current device is not nccl's or the plan's rank or peers are not ranks of nccl. */
tsr_err tsr_halo_create_nccl(const tsr_halo_plan *plan, ncclComm_t nccl, int ncomp,
                             cudaStream_t comm_stream, tsr_halo **halo);

/* tsr_halo_begin for overlap: records an event on producer, makes the communication stream
 * wait for it, then enqueues the pack kernels and one NCCL group of sends and receives on the
 * communication stream. So packing reads the owned cells only after all work issued to
 * producer before this call (the kernel that wrote them); the host returns at once. Work
 * issued to producer afterwards runs concurrently with the exchange: it may read the owned
 * cells but must not write the field, nor read its ghosts, until ordered after
 * tsr_halo_end_before. producer may be the communication stream itself (no event then) or
 * cudaStreamLegacy. NCCL exchanges only. Errors: as tsr_halo_begin, and TSR_ERR_STATE on an
 * MPI exchange. Matching call: tsr_halo_end_before (or tsr_halo_end). */
tsr_err tsr_halo_begin_after(tsr_halo *halo, tsr_field *field, cudaStream_t producer);

/* tsr_halo_end for overlap: enqueues the unpack kernels on the communication stream, records
 * an event there and makes consumer wait for it, so work issued to consumer after this call
 * (the shell update) sees the ghosts. No host synchronisation: the host returns at once and
 * the exchange is idle (a next begin is ordered after this unpack by the communication
 * stream). Errors: as tsr_halo_end (asynchronous NCCL failures show at a later end or
 * synchronisation), and TSR_ERR_STATE on an MPI exchange. */
tsr_err tsr_halo_end_before(tsr_halo *halo, tsr_field *field, cudaStream_t consumer);

/* After the plan the exchange borrows was rebuilt in place for a new box (a rebalance): sizes
 * the exchange for it, keeping each device buffer that holds a new peer's values (no
 * allocation, and no cudaFree, which waits for the whole device, when the faces did not grow)
 * and uploading the new segment lists. Waits for the communication stream first; nothing may
 * be in flight. NCCL exchanges only. Errors: TSR_ERR_STATE (an MPI exchange, one in flight),
 * TSR_ERR_MEMORY, TSR_ERR_CUDA, TSR_ERR_NCCL; after an error only tsr_halo_destroy. */
tsr_err tsr_halo_refit_nccl(tsr_halo *halo);
#endif

#endif
