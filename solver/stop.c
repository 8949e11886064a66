/* Signals and the wall-time limit (solver/stop.h). */
#define _POSIX_C_SOURCE 200809L
#include "solver/stop.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/output.h"

/* In the allreduce a wall-time stop rides above every signal number. */
#define WALLTIME_FLAG 1000

static volatile sig_atomic_t first_signal, armed;
static int speaks; /* rank 0 of the world says why it ended */
static double walltime, started;

static const char ended[] =
    "tessera: ended at once by a signal, leaving no temporary file; 'latest' names the last "
    "complete checkpoint: continue with the same command and --restart latest\n";

/* Ends the process by sig, leaving no temporary file (unlink and raise are async-signal-safe;
 * sig is blocked in its handler, so it lands when the handler returns). */
static void die_now(int sig) {
  tsr_output_remove_tmp_files();
  if (armed && speaks) {
    ssize_t n = write(STDERR_FILENO, ended, sizeof ended - 1);
    (void)n; /* nothing to do if stderr is gone too */
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

static void on_signal(int sig) {
  /* the kernel repeats these by itself: XCPU every CPU second past the soft limit, PIPE at each
   * write to the closed pipe (the stop's own messages among them), so a repeat is no second ask */
  if (first_signal && (sig == SIGPIPE || sig == SIGXCPU)) return;
  /* before the run can act on it (reading the case, check, info) or at the second: at once */
  if (!armed || first_signal) {
    die_now(sig);
    return;
  }
  first_signal = sig;
}

/* Asks for a stop: the job's own (TERM, INT, USR1), a batch system's warning before its kill
 * (XCPU: a CPU limit; USR2: SGE's -notify), the terminal gone (HUP, and PIPE when the run's
 * output was piped to a reader that ended). */
static const int stop_signals[] = {SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGHUP, SIGXCPU, SIGPIPE};
/* Asks for the process's end, whose default leaves the temporary files of writes in flight. */
static const int end_signals[] = {SIGQUIT, SIGALRM};

void tsr_stop_install(void) {
  started = MPI_Wtime();
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  speaks = rank == 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART; /* the step loop polls the flag; no call should fail with EINTR */
  for (size_t i = 0; i < sizeof stop_signals / sizeof *stop_signals; ++i)
    sigaction(stop_signals[i], &sa, NULL);
  sa.sa_handler = die_now;
  for (size_t i = 0; i < sizeof end_signals / sizeof *end_signals; ++i)
    sigaction(end_signals[i], &sa, NULL);
}

void tsr_stop_arm(void) { armed = 1; }

void tsr_stop_set_walltime(double seconds) { walltime = seconds; }

int tsr_stop_signal(void) { return first_signal; }

double tsr_stop_elapsed(void) { return MPI_Wtime() - started; }

double tsr_stop_walltime(void) { return walltime; }

static int read_uint(const char **p, long *v) {
  char *end;
  if (**p < '0' || **p > '9') return -1;
  *v = strtol(*p, &end, 10);
  *p = end;
  return *v >= 0 && *v < 100000000 ? 0 : -1;
}

int tsr_stop_parse_walltime(const char *text, double *seconds) {
  const char *p = text;
  long f[3] = {0, 0, 0}, days = 0;
  int n = 0;
  if (read_uint(&p, &f[n++])) return -1;
  const int has_days = *p == '-';
  if (has_days) { /* D-HH[:MM[:SS]]: after the days the first field is hours, as Slurm reads it */
    days = f[0];
    f[0] = 0;
    n = 0;
    ++p;
    if (read_uint(&p, &f[n++])) return -1;
  }
  while (*p == ':' && n < 3) {
    ++p;
    if (read_uint(&p, &f[n++])) return -1;
  }
  if (*p) return -1;
  if (has_days) {
    if (f[0] > 23) return -1;
    n = 3; /* the fields not given are 0 */
  }
  double s = 0.0;
  if (n == 1) s = (double)f[0];
  else if (n == 2) s = 60.0 * (double)f[0] + (double)f[1];
  else s = 3600.0 * (double)f[0] + 60.0 * (double)f[1] + (double)f[2];
  if (n >= 2 && (f[n - 1] > 59 || (n == 3 && f[1] > 59))) return -1;
  s += 86400.0 * (double)days;
  if (!(s > 0.0)) return -1;
  *seconds = s;
  return 0;
}

tsr_err tsr_stop_begin(tsr_stop *s, MPI_Comm comm) {
  memset(s, 0, sizeof *s);
  s->req = MPI_REQUEST_NULL;
  s->start = started;
  if (MPI_Comm_dup(comm, &s->comm) != MPI_SUCCESS) {
    s->comm = MPI_COMM_NULL;
    return tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__, "MPI_Comm_dup failed for the stop poll");
  }
  return TSR_OK;
}

/* Before the first checkpoint has been timed, a write is assumed to go at 200 MB/s (a slow
 * shared file system) plus half a second to open, sync and rename. */
#define EST_BYTES_PER_S 2.0e8

void tsr_stop_margin(tsr_stop *s, double measured_write, double bytes, double step_time) {
  double w = measured_write > 0.0 ? measured_write : bytes / EST_BYTES_PER_S + 0.5;
  s->margin = 1.5 * w + 2.0 * step_time + 1.0;
}

static int local_flag(const tsr_stop *s) {
  if (first_signal) return first_signal;
  if (s->asked) return s->asked;
  int rank;
  MPI_Comm_rank(s->comm, &rank);
  if (rank == 0 && walltime > 0.0 && MPI_Wtime() - s->start + s->margin >= walltime)
    return WALLTIME_FLAG;
  return 0;
}

static int reason(int flag) { return flag == WALLTIME_FLAG ? TSR_STOP_WALLTIME : flag; }

void tsr_stop_ask(tsr_stop *s, int why) {
  s->asked = why == TSR_STOP_WALLTIME ? WALLTIME_FLAG : why;
}

void tsr_stop_settle(tsr_stop *s) {
  if (s->posted) MPI_Wait(&s->req, MPI_STATUS_IGNORE);
  s->posted = 0;
}

tsr_err tsr_stop_poll(tsr_stop *s, int now, int *why) {
  *why = 0;
  if (now) {
    if (s->posted) MPI_Wait(&s->req, MPI_STATUS_IGNORE);
    s->posted = 0;
    s->mine = local_flag(s);
    if (MPI_Allreduce(&s->mine, &s->all, 1, MPI_INT, MPI_MAX, s->comm) != MPI_SUCCESS)
      return tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__, "MPI_Allreduce of the stop flag failed");
    *why = reason(s->all);
    return TSR_OK;
  }
  if (s->posted) {
    if (MPI_Wait(&s->req, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__, "MPI_Wait on the stop flag failed");
    s->posted = 0;
    if (s->all) {
      *why = reason(s->all);
      return TSR_OK;
    }
  }
  s->mine = local_flag(s);
  if (MPI_Iallreduce(&s->mine, &s->all, 1, MPI_INT, MPI_MAX, s->comm, &s->req) != MPI_SUCCESS)
    return tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__, "MPI_Iallreduce of the stop flag failed");
  s->posted = 1;
  return TSR_OK;
}

void tsr_stop_end(tsr_stop *s) {
  if (s->posted) MPI_Wait(&s->req, MPI_STATUS_IGNORE);
  s->posted = 0;
  if (s->comm != MPI_COMM_NULL) MPI_Comm_free(&s->comm);
}

const char *tsr_stop_reason(int why) {
  switch (why) {
  case SIGTERM: return "SIGTERM";
  case SIGINT: return "SIGINT";
  case SIGUSR1: return "SIGUSR1";
  case SIGUSR2: return "SIGUSR2";
  case SIGHUP: return "SIGHUP (the terminal or session ended)";
  case SIGXCPU: return "SIGXCPU (the CPU-time limit)";
  case SIGPIPE: return "SIGPIPE (the reader of the output ended)";
  case TSR_STOP_WALLTIME: return "the wall-time limit (--walltime)";
  default: return "a signal";
  }
}
