/* CUDA graphs of several steps for parareal (solver/parareal/): a slice of a small grid is
 * bound by the host's kernel launches, and several slices share one GPU only when the host
 * can keep all of them fed. One graph holds `chunk` whole steps (an even number, so the state
 * and result slots are where they started after each launch), each step led by the kernel
 * that computes its stage times from a device step counter (kernels/step_time.h), so one
 * graph serves every step range of its context: parareal runs each slice's range again and
 * again, and the coarse grid runs every slice's. The steps are those of tsr_explicit_advance, bit
 * for bit. Private to solver/parareal/; without CUDA no graph is ever made. */
#ifndef TSR_PARAREAL_GRAPHS_H
#define TSR_PARAREAL_GRAPHS_H

#include <stdint.h>

#include "io/error.h"

struct tsr_run_ctx;
typedef struct tsr_pr_graph tsr_pr_graph;

/* *g for a context on the CUDA backend (gpu.graphs not off; on one rank of the group unless
 * gpu.graphs is on), else NULL. Nothing is captured yet. */
tsr_err tsr_pr_graph_create(struct tsr_run_ctx *x, int chunk, tsr_pr_graph **g);

/* Before U is filled for steps from `first`: the slot arrangement the graph was captured
 * with (swapping the slots, whose contents then mean nothing), and the device's step
 * counter at `first`. Accepts NULL. */
tsr_err tsr_pr_graph_begin(tsr_pr_graph *g, struct tsr_run_ctx *x, int64_t first);

/* Issues steps from `step` (time step * dt), at most `left`: one launch of the graph's chunk
 * when left allows it (capturing it first, the first time, after one plain step), else one
 * plain step; *issued is how many. g NULL: one plain step. Asynchronous. */
tsr_err tsr_pr_graph_issue(tsr_pr_graph *g, struct tsr_run_ctx *x, int64_t step, int64_t left,
                           int64_t *issued);

/* Frees the graph (after the context's streams are idle). Accepts NULL; sets *g to NULL. */
void tsr_pr_graph_destroy(tsr_pr_graph **g);

#endif
