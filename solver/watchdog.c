/* The watchdog thread (solver/watchdog.h). */
#define _POSIX_C_SOURCE 200809L

#include "solver/watchdog.h"

#include <inttypes.h>
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PEERS 64 /* named in the message; a rank has at most 26 neighbours in 3D */

static struct {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  int running, stop;
  int rank;
  double timeout;
  int peers[MAX_PEERS], npeer;
  void (*hook)(void *);
  void *hook_arg;
} wd = {.lock = PTHREAD_MUTEX_INITIALIZER};

static atomic_llong beats, step_done;
static atomic_int waiting, fired;

void tsr_watchdog_beat(int64_t step) {
  atomic_store_explicit(&step_done, step, memory_order_relaxed);
  atomic_fetch_add_explicit(&beats, 1, memory_order_relaxed);
}

void tsr_watchdog_waiting(int on) {
  atomic_store_explicit(&waiting, on, memory_order_relaxed);
  /* entering or leaving a wait is progress too: only a wait that never ends is not */
  atomic_fetch_add_explicit(&beats, 1, memory_order_relaxed);
}

int tsr_watchdog_fired(void) { return atomic_load(&fired); }

void tsr_watchdog_on_abort(void (*fn)(void *), void *arg) {
  pthread_mutex_lock(&wd.lock);
  wd.hook = fn;
  wd.hook_arg = arg;
  pthread_mutex_unlock(&wd.lock);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The deadline of the communicator's abort (below). */
static void *abort_later(void *unused) {
  (void)unused;
  struct timespec d = {3, 0};
  nanosleep(&d, NULL);
  fprintf(stderr, "tessera: watchdog: rank %d: aborting the NCCL communicator did not return "
                  "within 3 s; ending the job\n", wd.rank);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 3);
  return NULL;
}

static void fire(double idle) {
  atomic_store(&fired, 1);
  long long step = atomic_load(&step_done);
  int on = atomic_load(&waiting);
  char list[512] = "";
  size_t w = 0;
  for (int i = 0; i < wd.npeer && w < sizeof list; ++i)
    w += (size_t)snprintf(list + w, sizeof list - w, "%s%d", i ? ", " : "", wd.peers[i]);
  if (on == TSR_WATCHDOG_GPU) {
    fprintf(stderr,
            "tessera: watchdog: rank %d made no progress for %.3g s (comm.timeout) at step %lld, "
            "waiting for its GPU's work (kernels and the NCCL exchange%s%s): its GPU or one of "
            "those ranks has stopped; aborting the job\n",
            wd.rank, idle, step + 1, wd.npeer ? " with ranks " : "", list);
  } else if (on) {
    fprintf(stderr,
            "tessera: watchdog: rank %d made no progress for %.3g s (comm.timeout) at step %lld, "
            "waiting for %s%s: one of them has stopped (crashed, hung, or lost its GPU); "
            "aborting the job\n",
            wd.rank, idle, step + 1, wd.npeer ? "its halo peers, ranks " : "the other ranks",
            list);
  } else {
    fprintf(stderr,
            "tessera: watchdog: rank %d stopped: no progress for %.3g s (comm.timeout) after "
            "step %lld while not waiting for any other rank (hung in computation, I/O or its "
            "GPU); aborting the job\n",
            wd.rank, idle, step);
  }
  fflush(stderr);
  pthread_mutex_lock(&wd.lock);
  void (*hook)(void *) = wd.hook;
  void *arg = wd.hook_arg;
  pthread_mutex_unlock(&wd.lock);
  if (hook) {
    /* the NCCL communicator first: MPI_Abort does not unblock NCCL. But the abort itself can
     * block (seen with the exchange inside a replayed CUDA graph on 2 GPUs: the job outlived
     * the watchdog's message), so the job ends a few seconds later whatever it does */
    pthread_t t;
    if (pthread_create(&t, NULL, abort_later, NULL) == 0) pthread_detach(t);
    hook(arg);
  }
  MPI_Abort(MPI_COMM_WORLD, 3);
}

static void *watch(void *unused) {
  (void)unused;
  double poll = wd.timeout / 20;
  if (poll < 0.01) poll = 0.01;
  if (poll > 1.0) poll = 1.0;
  long long seen = atomic_load(&beats);
  double since = now();
  pthread_mutex_lock(&wd.lock);
  while (!wd.stop) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double t = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec + poll;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    pthread_cond_timedwait(&wd.wake, &wd.lock, &ts);
    if (wd.stop) break;
    long long b = atomic_load(&beats);
    double tn = now();
    /* a rank left waiting gives the rank it waits for a quarter of the timeout more, so that
     * the one that stopped is the one that reports first and names itself */
    double limit = atomic_load(&waiting) ? 1.25 * wd.timeout : wd.timeout;
    if (b != seen) {
      seen = b;
      since = tn;
    } else if (tn - since >= limit) {
      pthread_mutex_unlock(&wd.lock);
      fire(tn - since);
      return NULL; /* not reached: MPI_Abort ends the process */
    }
  }
  pthread_mutex_unlock(&wd.lock);
  return NULL;
}

tsr_err tsr_watchdog_start(int rank, double timeout, const int *peers, int npeer) {
  TSR_CHECK(!wd.running, TSR_ERR_STATE, "tsr_watchdog_start: a watchdog is already running");
  TSR_CHECK(timeout > 0, TSR_ERR_INTERNAL, "tsr_watchdog_start: timeout %g is not > 0", timeout);
  wd.rank = rank;
  wd.timeout = timeout;
  wd.npeer = npeer < MAX_PEERS ? npeer : MAX_PEERS;
  if (wd.npeer > 0) memcpy(wd.peers, peers, sizeof(int) * (size_t)wd.npeer);
  wd.stop = 0;
  atomic_store(&waiting, 0);
  atomic_store(&fired, 0);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&wd.wake, &ca);
  pthread_condattr_destroy(&ca);
  int e = pthread_create(&wd.thread, NULL, watch, NULL);
  if (e != 0) {
    pthread_cond_destroy(&wd.wake);
    return tsr_err_set(TSR_ERR_INTERNAL, __FILE__, __LINE__,
                       "rank %d: cannot start the watchdog thread: %s", rank, strerror(e));
  }
  wd.running = 1;
  return TSR_OK;
}

void tsr_watchdog_stop(void) {
  if (wd.running) {
    pthread_mutex_lock(&wd.lock);
    wd.stop = 1;
    pthread_cond_signal(&wd.wake);
    pthread_mutex_unlock(&wd.lock);
    pthread_join(wd.thread, NULL);
    pthread_cond_destroy(&wd.wake);
    wd.running = 0;
  }
  tsr_watchdog_on_abort(NULL, NULL);
}
