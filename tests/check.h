/* CHECK for the plain-C MPI and GPU test programs: on failure, report where, what, the rank
 * and tessera's last message, and stop every rank (none may wait in a collective for this
 * one). The including file defines `static int g_rank;` before including this header. */
#ifndef TSR_TESTS_CHECK_H
#define TSR_TESTS_CHECK_H

#include <mpi.h>
#include <stdio.h>

#include "io/error.h"

#define CHECK(cond, ...)                                                                       \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", g_rank, __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                            \
      fprintf(stderr, "\n  last message: %s\n", tsr_err_message());                           \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                            \
    }                                                                                          \
  } while (0)

#endif
