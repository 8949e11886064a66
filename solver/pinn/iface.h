/* The PINN's interface exchange, its halo exchange (DESIGN.md, PINN method): every iteration
 * each subdomain sends its neighbours its predictions at the interface points they share
 * (value, outward flux and PDE residual per component: TSR_PINN_IFACE_NV x ncomp doubles a
 * point) and receives theirs at the same points. The points of one neighbour are one run of
 * the interface points (solver/pinn/points.h), so a neighbour's data is one message each way,
 * sent straight from the send array and received straight into the receive array.
 *
 * Split phase, like tsr_halo_begin/end: begin posts the receives and the sends; the subdomain's
 * own forward pass over its batch runs; end completes them. MPI (host arrays): MPI_Irecv and
 * MPI_Isend on a duplicate of the run's communicator. NCCL (device arrays): on its own
 * high-priority communication stream, after an event of the caller's stream (what produced
 * send), one NCCL group of ncclRecv/ncclSend per neighbour; end makes the caller's stream wait
 * for it. Private to solver/pinn/. */
#ifndef TSR_PINN_IFACE_H
#define TSR_PINN_IFACE_H

#include <mpi.h>

#include "io/error.h"
#include "solver/pinn/points.h"

#ifdef TSR_HAVE_CUDA
#include <nccl.h>
#endif

typedef struct tsr_pinn_iface tsr_pinn_iface;

/* An exchange over MPI for the neighbours of peers (copied), nv doubles a point. Collective
 * over comm (it is duplicated). The caller owns *out (tsr_pinn_iface_destroy). Errors:
 * TSR_ERR_MEMORY, TSR_ERR_MPI. */
tsr_err tsr_pinn_iface_create_mpi(MPI_Comm comm, const tsr_pinn_peers *peers, int nv,
                                  tsr_pinn_iface **out);

#ifdef TSR_HAVE_CUDA
/* An exchange over NCCL (nccl borrowed: it must outlive the exchange; NCCL rank = the layout's
 * rank), on the current device. Not collective. Errors: TSR_ERR_MEMORY, TSR_ERR_CUDA. */
tsr_err tsr_pinn_iface_create_nccl(ncclComm_t nccl, const tsr_pinn_peers *peers, int nv,
                                   tsr_pinn_iface **out);
#endif

/* 1 when the exchange moves device arrays (NCCL), 0 for host arrays (MPI). */
int tsr_pinn_iface_device(const tsr_pinn_iface *x);

/* The neighbours it exchanges with (0: begin and end do nothing). */
int tsr_pinn_iface_npeer(const tsr_pinn_iface *x);

/* Posts the exchange: each neighbour's run of send (npoints x nv doubles, in the exchange's
 * memory space) goes out and its run of recv is to be filled. Neither array may be touched
 * until tsr_pinn_iface_end. stream: the caller's cudaStream_t that produces send (NCCL; NULL
 * for MPI). Errors: TSR_ERR_STATE (an exchange already in flight), TSR_ERR_MPI, TSR_ERR_NCCL,
 * TSR_ERR_CUDA. */
tsr_err tsr_pinn_iface_begin(tsr_pinn_iface *x, const double *send, double *recv, void *stream);

/* Completes it: MPI: recv holds the neighbours' values on return; NCCL: work issued on stream
 * after this call sees them. Errors: TSR_ERR_STATE (no exchange in flight), TSR_ERR_MPI,
 * TSR_ERR_CUDA. */
tsr_err tsr_pinn_iface_end(tsr_pinn_iface *x, void *stream);

/* Completes an exchange in flight, frees and sets *x to NULL; accepts NULL. */
void tsr_pinn_iface_destroy(tsr_pinn_iface **x);

#endif
