/* Checkpoints that do not stop the run for the disk (DESIGN.md, State on disk). At a
 * checkpoint the step loop waits for the previous write to finish, copies the state U into
 * staging memory allocated once (pinned host memory on GPUs: one device-to-host copy of the
 * whole allocation on a stream of its own; a memcpy on CPU ranks) and steps on, while a
 * thread writes the file through io/checkpoint.h on a duplicate of the run's communicator,
 * reading the owned cells where they lie in the staged copy (its chunks are gathered from
 * there), and rank 0 removes the checkpoints beyond output.keep in one more thread after
 * that. With output.checkpoint_async: false, or where MPI gives threads no concurrent calls
 * (MPI_THREAD_MULTIPLE), the write runs in the step loop instead.
 *
 * HDF5 is used by one thread at a time (tsr_io_lock), and the run waits for the write in flight
 * (tsr_ckpt_writer_wait) before any other output of its own: two threads of a rank inside
 * collective HDF5 I/O at once could wait on each other's peers. Private to solver/. */
#ifndef TSR_CKPT_WRITER_H
#define TSR_CKPT_WRITER_H

#include <stdint.h>

#include "io/error.h"
#include "io/output.h"
#include "solver/run.h"

struct tsr_run_ctx;
typedef struct tsr_ckpt_writer tsr_ckpt_writer;

/* Creates the checkpoint writer of run x (its fields, backend and output directory exist):
 * duplicates x->comm and allocates the staging memory once. Collective over x->comm. *w is set
 * even on failure (destroy it). Errors: TSR_ERR_MEMORY, TSR_ERR_CUDA, TSR_ERR_MPI, agreed. */
tsr_err tsr_ckpt_writer_create(struct tsr_run_ctx *x, tsr_ckpt_writer **w);

/* Checkpoints x's state U as step `step` at time t: waits for the previous write (returning
 * its error, which names the file, on every rank), copies U into staging memory and hands it
 * to the writer thread (or writes it here when not asynchronous). The time from the wait to
 * the hand-off is the stall (tsr_run_result ckpt_*). Collective over x->comm. Errors: those of
 * tsr_checkpoint_write (TSR_ERR_IO, TSR_ERR_HDF5), the backend's copy, the same on every
 * rank. */
tsr_err tsr_ckpt_writer_save(tsr_ckpt_writer *w, struct tsr_run_ctx *x, int64_t step, double t);

/* A state kept outside the run's fields (method implicit: PETSc's vector and BDF's history):
 * nfield host arrays, each the owned box's cells contiguous (x fastest), written as the
 * datasets /fields/<names[f]>, the dt attribute, and nattr more root attributes (no int64
 * lists; at most TSR_CHECKPOINT_MAX_MORE). */
typedef struct {
  int nfield;
  const char *const *names;
  const double *const *data;
  double dt;
  const tsr_output_attr *attrs;
  int nattr;
} tsr_ckpt_state;

/* As tsr_ckpt_writer_save, for the state s instead of x's field U: waits for the previous
 * write, copies s (arrays, names and attributes: the caller may change or free them on return)
 * into the writer's memory, and hands it to the writer thread. The copy is the state at the
 * step: what the thread writes does not depend on what the caller does next. Collective over
 * x->comm. Errors: as tsr_ckpt_writer_save, TSR_ERR_MEMORY, TSR_ERR_INTERNAL (too many
 * fields or attributes). */
tsr_err tsr_ckpt_writer_save_state(tsr_ckpt_writer *w, struct tsr_run_ctx *x, int64_t step,
                                   double t, const tsr_ckpt_state *s);

/* Waits for the write in flight, if any, and the removal of old checkpoints after it (the
 * directory then holds its final files); returns its error (message naming the file) on every
 * rank. Collective over the run's communicator. w NULL (a run without checkpoints): TSR_OK. */
tsr_err tsr_ckpt_writer_wait(tsr_ckpt_writer *w);

/* After a migration changed x's box: waits for the write in flight, then stages U's new
 * allocation. Collective. Errors: as tsr_ckpt_writer_create. w NULL: TSR_OK. */
tsr_err tsr_ckpt_writer_relayout(tsr_ckpt_writer *w);

/* The longest single write of this rank so far, in seconds (0 before the first; w NULL: 0).
 * Not collective. */
double tsr_ckpt_writer_longest(const tsr_ckpt_writer *w);

/* Fills res->ckpt_* with this run's figures, the slowest rank's. Collective. */
void tsr_ckpt_writer_report(const tsr_ckpt_writer *w, tsr_run_result *res);

/* Joins the writer thread (the error of its write, if any, is dropped: on this path the run
 * has already failed), frees the staging memory and the communicator. Accepts NULL; sets *w
 * to NULL. Called on every rank (it frees a communicator). */
void tsr_ckpt_writer_destroy(tsr_ckpt_writer **w);

#endif
