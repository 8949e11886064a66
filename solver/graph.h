/* CUDA graphs of whole steps (gpu.graphs): for small subdomains the host's launch rate, not
 * the GPU, bounds the step rate, since one step issues a few dozen kernels and NCCL calls.
 * The CUDA backend captures a whole step (every stage: boundary, exchange, source, interior,
 * shell) once per slot parity, the state and result slots swapping every step, and replays
 * it; the host work between steps (monitors, snapshots, checkpoints) stays outside.
 *
 * A replay repeats its kernels' arguments, so the time cannot be one: in a captured step the
 * expression kernels read their stage time from device memory (x->tdev), which the graph's
 * first kernel computes from a device step counter with the host's rounding
 * (kernels/step_time.h); a case whose boundary values and sources do not depend on t has no
 * such kernel. The host-side caches that decide whether a time-dependent boundary
 * or source is evaluated are emptied at capture, so each graph evaluates them itself and is
 * right whatever ran before it. The first step of a run is issued plainly: it allocates and
 * fills what does not change with time (face buffers, a constant source).
 *
 * When capture or instantiation fails on any rank (an NCCL before 2.9 cannot be captured),
 * every rank goes back to plain launches for the rest of the run; rank 0 warns once. Results
 * are the same bits either way. Private to solver/; without CUDA every call is a no-op. */
#ifndef TSR_GRAPH_H
#define TSR_GRAPH_H

#include <stdint.h>

#include "io/error.h"
#include "solver/run.h"

struct tsr_run_ctx;
typedef struct tsr_graph tsr_graph;

/* One step's work issued plainly: every stage of the step from time t. */
typedef tsr_err (*tsr_graph_step_fn)(struct tsr_run_ctx *x, double t);

/* After the backend's prepare: *g for a run that uses graphs (CUDA backend, gpu.graphs auto
 * or on), else NULL. Errors: TSR_ERR_MEMORY, TSR_ERR_CUDA. */
tsr_err tsr_graph_create(struct tsr_run_ctx *x, tsr_graph **g);

/* Issues step `step` from time t = step * dt: plainly through fn when g is NULL, at the
 * run's first step, after a fallback and in a fused block cut short (time.fuse); else
 * captured (the first step of each slot parity, and with time.fuse of each place in the
 * block: x->fuse_pos) and launched, or replayed. Asynchronous like fn. Collective at the
 * captures (every rank must step the same steps). Errors: those of fn, TSR_ERR_CUDA (a failed
 * launch). */
tsr_err tsr_graph_step(tsr_graph *g, struct tsr_run_ctx *x, int64_t step, double t,
                       tsr_graph_step_fn fn);

/* After the loop's last step, once the device is idle: res->graph_steps, and with
 * opts.graph_timing res->graph_gpu_time. Accepts NULL (zeros). Errors: TSR_ERR_CUDA. */
tsr_err tsr_graph_finish(tsr_graph *g, tsr_run_result *res);

/* For report.json: "on" (steps were replayed), "off" (not asked for, not the CUDA backend, or
 * too few steps) or "fallback" (capture failed; plain launches); *replays: the steps issued as
 * graph launches. */
const char *tsr_graph_mode(const tsr_graph *g, int64_t *replays);

/* Frees the graphs; waits for nothing (the backend's teardown synchronises). Accepts NULL;
 * sets *g to NULL. */
void tsr_graph_destroy(tsr_graph **g);

#endif
