#define _GNU_SOURCE
#include "solver/threads.h"

#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static tsr_threads chosen;

void tsr_threads_pick(MPI_Comm comm, tsr_threads *t) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0 || CPU_COUNT(&mine) == 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    CPU_ZERO(&mine);
    for (long i = 0; i < n && i < CPU_SETSIZE; ++i) CPU_SET((int)i, &mine);
  }
  /* how many of the node's ranks have each CPU in their mask: a sum over the node, so no rank
   * can fail where the others go on */
  static int have[CPU_SETSIZE], count[CPU_SETSIZE];
  for (int i = 0; i < CPU_SETSIZE; ++i) have[i] = CPU_ISSET(i, &mine);
  int rank;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Allreduce(have, count, CPU_SETSIZE, MPI_INT, MPI_SUM, node);
  MPI_Comm_free(&node);
  /* this rank's fair share of its CPUs: each CPU split evenly among the ranks that have it */
  double share = 0.0;
  int sharing = 1;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (have[i] && count[i] > 0) {
      share += 1.0 / count[i];
      if (count[i] > sharing) sharing = count[i];
    }
  const char *env = getenv("OMP_NUM_THREADS");
  t->cpus = CPU_COUNT(&mine);
  t->sharing = sharing;
  t->by_env = env && *env;
  if (!t->by_env) {
    int n = (int)(share + 1e-9);
    omp_set_num_threads(n > 0 ? n : 1);
  }
  t->threads = omp_get_max_threads();
  chosen = *t;
}

tsr_threads tsr_threads_chosen(void) { return chosen; }

void tsr_threads_describe(const tsr_threads *t, char *buf, int n) {
  const char *env = getenv("OMP_NUM_THREADS");
  if (t->by_env)
    snprintf(buf, (size_t)n, "%d thread%s per rank (OMP_NUM_THREADS=%s)", t->threads,
             t->threads == 1 ? "" : "s", env ? env : "");
  else if (t->sharing == 1)
    snprintf(buf, (size_t)n, "%d thread%s per rank (the rank's own %d CPU%s; OMP_NUM_THREADS unset)",
             t->threads, t->threads == 1 ? "" : "s", t->cpus, t->cpus == 1 ? "" : "s");
  else
    snprintf(buf, (size_t)n, "%d thread%s per rank (%d CPU%s shared by %d ranks on the node; "
             "OMP_NUM_THREADS unset)", t->threads, t->threads == 1 ? "" : "s", t->cpus, t->cpus == 1 ? "" : "s", t->sharing);
}

void tsr_threads_report(tsr_json *j) {
  tsr_json_object_begin(j, "openmp");
  tsr_json_int(j, "threads", chosen.threads);
  tsr_json_int(j, "cpus", chosen.cpus);
  tsr_json_int(j, "ranks_sharing", chosen.sharing);
  tsr_json_string(j, "set_by", chosen.by_env ? "OMP_NUM_THREADS" : "tessera");
  tsr_json_object_end(j);
}
