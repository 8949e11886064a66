/* CHECK for the plain-C MPI and GPU test programs: on failure, report where, what, the rank
 * and tessera's last message, and stop every rank (none may wait in a collective for this
 * one). The including file defines `static int g_rank;` before including this header. */
#ifndef TSR_TESTS_CHECK_H
#define TSR_TESTS_CHECK_H

#include <mpi.h>
#include <stdio.h>

#include "io/error.h"
#include "tests/support/xorshift.h"

#define CHECK(cond, ...)                                                                       \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", g_rank, __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                            \
      fprintf(stderr, "\n  last message: %s\n", tsr_err_message());                           \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                            \
    }                                                                                          \
  } while (0)

#ifdef CUDART_VERSION /* the including file brought in cuda_runtime_api.h */
#define CUDA_OK(call)                                                                          \
  do {                                                                                         \
    cudaError_t e_ = (call);                                                                   \
    CHECK(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));                         \
  } while (0)
#endif

#ifdef TSR_CHECK_SCRATCH /* defined by tests that write files (with _POSIX_C_SOURCE 200809L) */
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

/* A scratch directory named from prefix (rank 0 makes it; every rank gets its name) and its
 * removal with the files in it. Collective. */
static inline void check_scratch_dir(char *dir, size_t n, const char *prefix) {
  if (g_rank == 0) {
    snprintf(dir, n, "%s_XXXXXX", prefix);
    CHECK(mkdtemp(dir), "mkdtemp %s", dir);
  }
  MPI_Bcast(dir, (int)n, MPI_CHAR, 0, MPI_COMM_WORLD);
}

static inline void check_scratch_remove(const char *dir) {
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank != 0) return;
  DIR *d = opendir(dir);
  struct dirent *e;
  char p[600];
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    remove(p);
  }
  if (d) closedir(d);
  CHECK(rmdir(dir) == 0, "cannot remove %s", dir);
}
#endif

#endif
