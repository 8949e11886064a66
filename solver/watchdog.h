/* The watchdog: one thread per rank that aborts the whole job when this rank's step loop
 * stops making progress, so that a lost rank or GPU never leaves the others waiting forever.
 *
 * The step loop bumps a heartbeat (tsr_watchdog_beat) and marks where it waits on other ranks
 * (tsr_watchdog_waiting); when the heartbeat has not moved for the timeout (comm.timeout; 1.25
 * times that while waiting, so the rank that stopped reports first), the thread prints on
 * stderr which rank stopped, at which step, and whether it was waiting for its halo peers
 * (naming them) or was itself the one stuck; then it runs the abort hook (the
 * CUDA backend's: ncclCommAbort) and MPI_Abort(MPI_COMM_WORLD, 3). One watchdog per process;
 * its calls are thread-safe and cheap (atomic stores). */
#ifndef TSR_WATCHDOG_H
#define TSR_WATCHDOG_H

#include <stdint.h>

#include "io/error.h"

/* Starts the watchdog thread of rank `rank` with the given timeout (seconds, > 0) and the
 * ranks it exchanges halos with (copied; the message names them). Not collective. Errors:
 * TSR_ERR_STATE when one is running, TSR_ERR_INTERNAL when no thread can be made. */
tsr_err tsr_watchdog_start(int rank, double timeout, const int *peers, int npeer);

/* Progress: this rank has completed `step` steps. */
void tsr_watchdog_beat(int64_t step);

/* What this rank waits for: TSR_WATCHDOG_PEERS while it waits on other ranks (halo exchange,
 * reductions), TSR_WATCHDOG_GPU while the host waits for its GPU's work (kernels and the NCCL
 * exchange they are queued with), 0 after. */
enum { TSR_WATCHDOG_PEERS = 1, TSR_WATCHDOG_GPU = 2 };
void tsr_watchdog_waiting(int on);

/* What the watchdog runs before MPI_Abort, on its own thread (NULL: nothing). The hook must
 * stay valid until tsr_watchdog_stop or until it is replaced. */
void tsr_watchdog_on_abort(void (*fn)(void *), void *arg);

/* 1 once the watchdog has fired (the job is being aborted): waits polling on the host give
 * up instead of spinning on. */
int tsr_watchdog_fired(void);

/* Stops and joins the thread, clears the abort hook. Accepts a watchdog never started. */
void tsr_watchdog_stop(void);

#endif
