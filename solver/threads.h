/* OpenMP threads per rank where the user did not say: a rank's threads share the CPUs of its
 * affinity mask with the other ranks on its node whose masks overlap it, so that N ranks
 * launched unbound on C cores run C / N threads each instead of C each (N x C spinning
 * threads on C cores: with 4 ranks on 2 cores a 12-step run took 4-5 s instead of 0.7 s). */
#ifndef TSR_THREADS_H
#define TSR_THREADS_H

#include <mpi.h>

#include "io/json.h"

typedef struct {
  int threads; /* OpenMP threads per rank in use after tsr_threads_pick */
  int cpus;    /* CPUs in this rank's affinity mask */
  int sharing; /* the most ranks of this node that hold one of this rank's CPUs (itself included) */
  int by_env;  /* 1: OMP_NUM_THREADS was set and is left to rule */
} tsr_threads;

/* Sets the OpenMP threads of this rank (omp_set_num_threads) to its share of its CPUs (each CPU
 * split evenly among the node's ranks whose masks hold it; at least 1) where
 * OMP_NUM_THREADS is unset or empty, and describes the choice in *t. Where it is set, OpenMP
 * keeps it and t says so. Collective over comm (the ranks of a node compare their masks).
 * Never fails: without an affinity mask it counts the node's online CPUs. */
void tsr_threads_pick(MPI_Comm comm, tsr_threads *t);

/* The choice of the last tsr_threads_pick in this process (all zeros before one). */
tsr_threads tsr_threads_chosen(void);

/* One line for people, e.g. "1 thread per rank (2 CPUs shared by 4 ranks on the node; OMP_NUM_THREADS
 * unset)", into buf of size n. */
void tsr_threads_describe(const tsr_threads *t, char *buf, int n);

/* report.json's "openmp" object (rank 0's choice): threads, cpus, ranks_sharing, set_by
 * ("OMP_NUM_THREADS" or "tessera"). */
void tsr_threads_report(tsr_json *j);

#endif
