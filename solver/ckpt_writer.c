/* The checkpoint writer: staging in the step loop, HDF5 in a thread (solver/ckpt_writer.h). */
#define _POSIX_C_SOURCE 200809L

#include "solver/ckpt_writer.h"

#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/checkpoint.h"
#include "solver/run_internal.h"

#define MSG_MAX 4096

struct tsr_ckpt_writer {
  tsr_run_ctx *x;        /* the run: backend, case (main thread only) */
  MPI_Comm comm;         /* the writer's duplicate of x->comm */
  int async;             /* 1: the write runs in `thread` */
  int threads;           /* OpenMP threads that gather and checksum the file's chunks:
                            on a device all but one (it drives the device), on CPU ranks 1
                            (the cores step meanwhile); all for synchronous writes */
  void *stage;           /* the backend's staging handle */
  void *raw;             /* host copy of U's whole allocation (ghosts included) */
  size_t raw_bytes;
  size_t stage_cap;      /* bytes the staging holds: kept while a migration's box fits it
                            (pinned memory of a GiB takes long to allocate and free) */
  tsr_field shape;       /* U's layout (box, gbox, strides); its data is not used */
  const void *base[TSR_MAX_COMP]; /* in raw: each component's owned lo corner */
  tsr_output_layout layout;       /* the owned cells where they lie in raw, as the file's
                                     chunks are gathered from them (no copy of their own) */
  /* Removing the checkpoints beyond output.keep (rank 0): a 1 GB file takes tens of ms to
   * unlink, which inside the write would delay the next checkpoint whenever the writer is the
   * slower side; so a thread of its own does it after each write, joined before the next
   * one starts and when the run waits for its writes. */
  pthread_t pruner;
  int pruning;
  char *case_text;       /* the case as checkpoints record it */
  uint64_t case_hash;
  /* The write in flight. The loop sets meta and path before the thread starts and reads the
   * rest after pthread_join; the thread writes err, msg and seconds. */
  tsr_grid_meta meta;
  char path[4200];
  tsr_rebalance_state rebal; /* the rebalancer's state at the step (has_rebal) */
  /* A state of tsr_ckpt_writer_save_state (nstate fields; 0: U's staged copy is written),
   * copied at the step: its arrays one after the other in `state` (grown, never shrunk), its
   * names and attributes into the buffers below. */
  int nstate, nattr;
  double *state;
  size_t state_len;
  double state_dt;
  const double *state_data[TSR_MAX_COMP * 8];
  char state_name[TSR_MAX_COMP * 8][64];
  const char *state_names[TSR_MAX_COMP * 8];
  tsr_output_attr attrs[TSR_CHECKPOINT_MAX_MORE];
  char attr_name[TSR_CHECKPOINT_MAX_MORE][64];
  char attr_str[TSR_CHECKPOINT_MAX_MORE][256];
  int has_rebal;
  pthread_t thread;
  int running;
  tsr_err stage_err;     /* this rank's staging failed (its message is in msg) */
  tsr_err err;
  int committed;         /* the file was complete when err happened (latest not updated) */
  char msg[MSG_MAX];
  double seconds;
  /* this rank's figures */
  int count;
  double stall, stall_max, wait, copy, write, final_wait;
  double longest;        /* the longest single write */
};

/* Bytes of a field's whole allocation. */
static size_t field_bytes(const tsr_field *f) { return tsr_field_bytes(f); }

static void *prune_main(void *arg) {
  tsr_ckpt_writer *w = arg;
  tsr_checkpoint_prune(w->x->out_dir, w->x->c->output.keep);
  return NULL;
}

/* Waits for the removal of old checkpoints in flight, if any. */
static void join_pruner(tsr_ckpt_writer *w) {
  if (w->pruning) pthread_join(w->pruner, NULL);
  w->pruning = 0;
}

/* Rank 0, after a checkpoint was written and latest names it: removes the checkpoints beyond
 * output.keep in the background (here, where no thread can be had). */
static void prune_later(tsr_ckpt_writer *w) {
  join_pruner(w);
  if (pthread_create(&w->pruner, NULL, prune_main, w) == 0) w->pruning = 1;
  else prune_main(w);
}

/* Writes the staged state (the thread's body, or the loop's when synchronous): the file's
 * chunks are gathered straight from the staged allocation. Collective over w->comm. */
static void write_staged(tsr_ckpt_writer *w) {
  double t0 = MPI_Wtime();
  const tsr_run_ctx *x = w->x;
  const tsr_case *c = x->c;
  /* a rank whose staging failed makes the whole write fail, here rather than in the loop,
   * so that the loop has no collective call at a checkpoint (it would wait for the slowest
   * rank to get there) */
  if (w->stage_err) tsr_err_set(w->stage_err, __FILE__, __LINE__, "%s", w->msg);
  tsr_err err = tsr_run_agree(w->comm, w->stage_err);
  w->committed = 0;
  /* the previous removal has had the steps between checkpoints; it ends before this write, so
   * that the disk never holds more than keep + 1 checkpoints (a nearly full disk must not
   * depend on which thread was faster) */
  join_pruner(w);
  if (!err && w->nstate)
    err = tsr_checkpoint_write(w->comm, x->out_dir, &w->meta, c->output.io, w->threads,
                               w->state_dt, w->case_text, w->case_hash, 0, &w->shape.box,
                               w->nstate, w->state_names, w->state_data, NULL, NULL, w->attrs,
                               w->nattr, &w->committed);
  else if (!err)
    err = tsr_checkpoint_write(w->comm, x->out_dir, &w->meta, c->output.io,
                               w->threads, x->dt, w->case_text, w->case_hash, 0, &w->shape.box,
                               c->ncomp, tsr_models[c->model].comp, NULL, &w->layout,
                               w->has_rebal ? &w->rebal : NULL, NULL, 0, &w->committed);
  if (!err && x->rank == 0) prune_later(w);
  w->err = err;
  snprintf(w->msg, sizeof w->msg, "%s", err ? tsr_err_message() : "");
  w->seconds = MPI_Wtime() - t0;
}

static void *thread_main(void *arg) {
  write_staged(arg);
  return NULL;
}

/* Waits for the write in flight; its error (the same on every rank: the write agrees on its
 * errors) becomes this thread's, naming the file. */
static tsr_err join(tsr_ckpt_writer *w) {
  if (w->running) {
    pthread_join(w->thread, NULL);
    w->running = 0;
  }
  w->write += w->seconds;
  if (w->seconds > w->longest) w->longest = w->seconds;
  w->seconds = 0;
  if (!w->err) return TSR_OK;
  tsr_err err = w->err;
  w->err = TSR_OK;
  if (w->committed)
    return tsr_err_set(err, __FILE__, __LINE__,
                       "checkpoint '%s' was written (%s write) but 'latest' could not be "
                       "pointed at it: %s",
                       w->path, w->async ? "background" : "synchronous", w->msg);
  return tsr_err_set(err, __FILE__, __LINE__,
                     "checkpoint '%s' was not written (%s write), so 'latest' still names the "
                     "one before it: %s",
                     w->path, w->async ? "background" : "synchronous", w->msg);
}

/* Staging memory for U's whole allocation, and where its owned cells lie in it. */
static tsr_err stage_setup(tsr_ckpt_writer *w, tsr_run_ctx *x) {
  tsr_err err = TSR_OK;
  w->shape = *x->slot[TSR_SLOT_U];
  w->shape.data = NULL;
  w->raw_bytes = field_bytes(&w->shape);
  if (!w->stage || w->raw_bytes > w->stage_cap) {
    if (w->stage) x->be->stage_destroy(x, &w->stage);
    w->stage_cap = 0;
    err = x->be->stage_create(x, w->raw_bytes, &w->stage, &w->raw);
    if (!err) w->stage_cap = w->raw_bytes;
  }
  if (!err) {
    const tsr_field *f = &w->shape;
    const tsr_box *b = &f->box;
    size_t vsize = tsr_prec_size(f->prec);
    for (int q = 0; q < f->ncomp; ++q)
      w->base[q] = (const unsigned char *)w->raw +
                   (size_t)tsr_field_at(f, q, b->lo[0], b->lo[1], b->lo[2]) * vsize;
    w->layout = (tsr_output_layout){w->base, f->prec == TSR_PREC_SINGLE, f->sy, f->sz};
  }
  return err;
}

tsr_err tsr_ckpt_writer_create(tsr_run_ctx *x, tsr_ckpt_writer **wp) {
  static int said; /* the fallback note, once per process */
  tsr_ckpt_writer *w;
  *wp = NULL;
  TSR_ALLOC(w, 1, "the checkpoint writer");
  *wp = w;
  w->x = x;
  w->comm = MPI_COMM_NULL;
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  w->async = x->c->output.checkpoint_async && provided == MPI_THREAD_MULTIPLE;
  if (x->c->output.checkpoint_async && !w->async && x->rank == 0 && !x->opts.quiet && !said) {
    fprintf(stderr, "tessera: note: this MPI does not allow concurrent calls from threads "
                    "(MPI_THREAD_MULTIPLE), so checkpoints are written in the step loop\n");
    said = 1;
  }
  tsr_err err = TSR_OK;
  if (MPI_Comm_dup(x->comm, &w->comm) != MPI_SUCCESS) {
    w->comm = MPI_COMM_NULL;
    err = tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__,
                      "MPI_Comm_dup failed for the checkpoint writer");
  }
  /* where the stepping runs on a device, the writer takes the cores but the one that drives
   * the device; a synchronous write stops the loop anyway and takes them all */
  int cores = omp_get_max_threads();
  int device = x->be->mem == TSR_MEM_DEVICE;
  w->threads = !w->async ? cores : !device ? 1 : cores > 2 ? cores - 1 : cores;
  static int said_cores;
  if (device && w->async && cores == 1 && sysconf(_SC_NPROCESSORS_ONLN) > 1 && x->rank == 0 &&
      !x->opts.quiet && !said_cores) {
    /* mpirun binds each of up to 2 ranks to one core by default (Open MPI) */
    fprintf(stderr, "tessera: note: the checkpoint writer has one core (this rank is bound to one "
                    "core or OMP_NUM_THREADS is 1), so checkpoints are built and checksummed by "
                    "one thread; give each rank more cores (e.g. mpirun --bind-to none)\n");
    said_cores = 1;
  }
  if (!err) err = stage_setup(w, x);
  if (!err && !(w->case_text = tsr_case_record(x->c)))
    err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory for the case text");
  w->case_hash = tsr_case_restart_hash(x->c);
  return tsr_run_agree(x->comm, err);
}

/* Copies state s into the writer's memory (s NULL: U's allocation through the backend). */
static tsr_err stage_state(tsr_ckpt_writer *w, tsr_run_ctx *x, const tsr_ckpt_state *s) {
  w->nstate = 0;
  w->nattr = 0;
  if (!s) return x->be->stage_copy(x, w->stage, x->slot[TSR_SLOT_U], w->raw_bytes);
  const int maxf = (int)(sizeof w->state_data / sizeof *w->state_data);
  TSR_CHECK(s->nfield >= 1 && s->nfield <= maxf && s->nattr >= 0 &&
                s->nattr <= TSR_CHECKPOINT_MAX_MORE,
            TSR_ERR_INTERNAL, "a checkpoint of %d fields and %d attributes (at most %d and %d)",
            s->nfield, s->nattr, maxf, TSR_CHECKPOINT_MAX_MORE);
  const size_t n = (size_t)tsr_box_cells(&w->shape.box);
  if (w->state_len < n * (size_t)s->nfield) {
    free(w->state);
    w->state_len = 0;
    TSR_ALLOC(w->state, n * (size_t)s->nfield, "the checkpoint's staged state");
    w->state_len = n * (size_t)s->nfield;
  }
  for (int f = 0; f < s->nfield; ++f) {
    memcpy(w->state + (size_t)f * n, s->data[f], n * sizeof(double));
    w->state_data[f] = w->state + (size_t)f * n;
    snprintf(w->state_name[f], sizeof w->state_name[f], "%s", s->names[f]);
    w->state_names[f] = w->state_name[f];
  }
  for (int i = 0; i < s->nattr; ++i) {
    const tsr_output_attr *a = &s->attrs[i];
    TSR_CHECK(!a->ints, TSR_ERR_INTERNAL, "checkpoint attribute '%s': int64 lists are not "
              "staged", a->name);
    snprintf(w->attr_name[i], sizeof w->attr_name[i], "%s", a->name);
    w->attrs[i] = (tsr_output_attr){.name = w->attr_name[i], .num = a->num};
    if (a->str) {
      snprintf(w->attr_str[i], sizeof w->attr_str[i], "%s", a->str);
      w->attrs[i].str = w->attr_str[i];
    }
  }
  w->state_dt = s->dt;
  w->nstate = s->nfield;
  w->nattr = s->nattr;
  return TSR_OK;
}

tsr_err tsr_ckpt_writer_save(tsr_ckpt_writer *w, tsr_run_ctx *x, int64_t step, double t) {
  return tsr_ckpt_writer_save_state(w, x, step, t, NULL);
}

tsr_err tsr_ckpt_writer_save_state(tsr_ckpt_writer *w, tsr_run_ctx *x, int64_t step, double t,
                                   const tsr_ckpt_state *s) {
  /* the steps' own work finishes first: that is stepping, not the checkpoint's cost */
  tsr_err err = x->be->sync(x);
  double t0 = MPI_Wtime();
  /* the previous write's error is the same on every rank (the write agrees on it) */
  TSR_CALL(join(w));
  double t1 = MPI_Wtime();
  if (!err) err = stage_state(w, x, s);
  double t2 = MPI_Wtime();
  w->stage_err = err; /* agreed by the write */
  if (err) snprintf(w->msg, sizeof w->msg, "staging the state: %s", tsr_err_message());
  const tsr_case *c = x->c;
  w->meta = (tsr_grid_meta){c->dim, {c->cells[0], c->cells[1], c->cells[2]},
                            {c->lo[0], c->lo[1], c->lo[2]}, {c->hi[0], c->hi[1], c->hi[2]}, t,
                            step, c->precision == TSR_PRECISION_SINGLE};
  tsr_checkpoint_path(w->path, sizeof w->path, x->out_dir, step);
  const tsr_rebalance_state *rs = tsr_run_rebalance_state(x);
  w->has_rebal = rs != NULL;
  if (rs) w->rebal = *rs;
  err = TSR_OK;
  if (!w->async) {
    write_staged(w);
    err = join(w);
  } else if (pthread_create(&w->thread, NULL, thread_main, w) == 0) {
    w->running = 1;
  } else {
    /* no thread to be had: this rank writes here, meeting its peers' threads in the write's
     * collective calls; its error comes out at the next wait, as theirs do */
    write_staged(w);
  }
  double t3 = MPI_Wtime();
  w->count++;
  w->wait += t1 - t0;
  w->copy += t2 - t1;
  w->stall += t3 - t0;
  if (t3 - t0 > w->stall_max) w->stall_max = t3 - t0;
  x->phase[PH_OUTPUT] += t3 - t0;
  return err;
}

tsr_err tsr_ckpt_writer_wait(tsr_ckpt_writer *w) {
  if (!w) return TSR_OK;
  double t0 = MPI_Wtime();
  tsr_err err = join(w);
  join_pruner(w); /* the files on disk are final when the run ends */
  w->final_wait += MPI_Wtime() - t0;
  return tsr_run_agree(w->x->comm, err);
}

tsr_err tsr_ckpt_writer_relayout(tsr_ckpt_writer *w) {
  if (!w) return TSR_OK;
  TSR_CALL(tsr_ckpt_writer_wait(w));
  return tsr_run_agree(w->x->comm, stage_setup(w, w->x));
}

double tsr_ckpt_writer_longest(const tsr_ckpt_writer *w) { return w ? w->longest : 0.0; }

void tsr_ckpt_writer_report(const tsr_ckpt_writer *w, tsr_run_result *res) {
  enum { N = 8 };
  double mine[N] = {w->stall, w->stall_max, w->wait, w->copy, w->write, w->final_wait,
                    (double)w->raw_bytes, (double)w->count},
         most[N];
  MPI_Allreduce(mine, most, N, MPI_DOUBLE, MPI_MAX, w->x->comm);
  res->ckpt_stall = most[0];
  res->ckpt_stall_max = most[1];
  res->ckpt_wait = most[2];
  res->ckpt_copy = most[3];
  res->ckpt_write = most[4];
  res->ckpt_final_wait = most[5];
  res->ckpt_stage_bytes = most[6];
  res->ckpt_count = (int)most[7];
  res->ckpt_async = w->async;
  res->ckpt_file_bytes = (double)tsr_prec_size(w->shape.prec) *
                         (double)tsr_box_cells(&w->x->layout.global) *
                         (double)w->x->c->ncomp;
}

void tsr_ckpt_writer_destroy(tsr_ckpt_writer **wp) {
  tsr_ckpt_writer *w = *wp;
  if (!w) return;
  if (w->running) pthread_join(w->thread, NULL); /* its error is not this path's */
  join_pruner(w);
  if (w->stage) w->x->be->stage_destroy(w->x, &w->stage);
  free(w->state);
  if (w->comm != MPI_COMM_NULL) MPI_Comm_free(&w->comm);
  free(w->case_text);
  free(w);
  *wp = NULL;
}
