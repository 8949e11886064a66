/* Stopping a run cleanly before a batch job's end: on SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGHUP,
 * SIGXCPU or SIGPIPE, or before a wall-time limit (--walltime), every rank agrees on one step,
 * writes a checkpoint there, points `latest` at it and the run ends with TSR_STOP_EXIT_CODE. A
 * second signal (not a repeated XCPU or PIPE), SIGQUIT, SIGALRM, or any of them before the run
 * is armed ends the process at once, removing the temporary files of the writes in flight.
 *
 * The agreement costs one nonblocking allreduce of an int per step, posted after a step and
 * completed after the next one, so it has a whole step to travel and never adds a wait to
 * the step loop's critical path on a healthy machine. Private to solver/. */
#ifndef TSR_STOP_H
#define TSR_STOP_H

#include <mpi.h>
#include <stdint.h>

#include "io/error.h"

/* Exit status of a run that stopped on a signal or its wall time with a checkpoint written
 * (README, Exit status): a job script requeues it, tessera supervise does not relaunch it. */
enum { TSR_STOP_EXIT_CODE = 4 };

/* Why a run stopped: a signal number (> 0), or TSR_STOP_WALLTIME. */
enum { TSR_STOP_WALLTIME = -1 };

/* Installs the handlers of those signals (after MPI_Init, whose library may install its own)
 * and starts the wall-time clock. Not collective; once per process. */
void tsr_stop_install(void);

/* From here a stop signal asks for a stop rather than the process's end: called when a run is
 * about to start, so that reading a case (maybe from a pipe with no writer yet), `check` and
 * `info` end on the first signal as any command does. */
void tsr_stop_arm(void);

/* Sets the wall-time limit in seconds from tsr_stop_install (0: none). */
void tsr_stop_set_walltime(double seconds);

/* Parses a wall-time limit: [D-]HH:MM:SS, D-HH[:MM], MM:SS or seconds. Returns 0 and
 * *seconds > 0, or -1 for text of another form. */
int tsr_stop_parse_walltime(const char *text, double *seconds);

/* Seconds since tsr_stop_install, and the wall-time limit (0: none). */
double tsr_stop_elapsed(void);
double tsr_stop_walltime(void);

/* The first signal this process received (0: none). Async-signal-safe. */
int tsr_stop_signal(void);

/* The step loop's side: one per run. */
typedef struct {
  MPI_Comm comm;        /* a duplicate of the run's: the poll's allreduce is its own */
  MPI_Request req;
  int mine, all;
  int posted;
  double start;         /* MPI_Wtime at tsr_stop_install */
  double margin;        /* seconds kept before the wall-time limit (tsr_stop_margin) */
  int asked;            /* a stop asked for from outside comm (tsr_stop_ask): its flag */
} tsr_stop;

/* Duplicates comm. Collective. Errors: TSR_ERR_MPI. */
tsr_err tsr_stop_begin(tsr_stop *s, MPI_Comm comm);

/* The seconds to keep before the wall-time limit: a checkpoint write (the longest measured,
 * else a guess for one of `bytes`), two steps, and a second to end. Called on rank 0, which
 * decides. */
void tsr_stop_margin(tsr_stop *s, double measured_write, double bytes, double step_time);

/* Whether the run stops now, the same answer on every rank: *why is the reason (a signal, or
 * TSR_STOP_WALLTIME) or 0. now = 1 decides on the spot with a blocking allreduce (before the
 * first step); otherwise it completes the poll posted at the previous call and posts the next
 * one, so a signal is acted on within two steps. Collective over the comm of begin. */
tsr_err tsr_stop_poll(tsr_stop *s, int now, int *why);

/* A stop asked for from outside the poll's communicator (parareal: another rank group stopped
 * its iteration; why as tsr_stop_poll gives it): this rank's next poll counts it as a signal
 * of its own. Not collective. */
void tsr_stop_ask(tsr_stop *s, int why);

/* Completes a poll in flight and drops its answer, so that the next poll starts afresh (a
 * step loop that ended before the answer was needed). Collective over the comm of begin, as
 * the poll is. */
void tsr_stop_settle(tsr_stop *s);

/* Completes a poll in flight and frees the communicator. Collective. */
void tsr_stop_end(tsr_stop *s);

/* "SIGTERM", ..., "the wall-time limit (--walltime)" for why. */
const char *tsr_stop_reason(int why);

#endif
