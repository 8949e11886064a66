/* Parareal's checkpoints and restart (parareal_impl.h; README, Parallel in time).
 *
 * DIR/parareal_<iteration, 4 digits>.h5 is a checkpoint file (io/checkpoint.h: global
 * datasets, checksums, the case) whose fields are the P + 1 states of the iteration: <comp>_s<n>
 * is slice n's start state (n = P: the last slice's end), with the root attribute parareal =
 * [time_slices, iteration]. The fine and coarse results are not in it: they are computed
 * again from these states, bit for bit (both propagators are deterministic), so a restarted
 * run goes on exactly as the uninterrupted one would have, on any rank count, partitioner and
 * grouping. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/checkpoint.h"
#include "io/output.h"
#include "solver/parareal/parareal_impl.h"

static void file_name(char *buf, size_t n, int k) { snprintf(buf, n, "parareal_%04d.h5", k); }

/* Which group holds state n, and where (in[j]). */
static int owner(const pr *p, int n, int *j) {
  const int g = n < p->P ? n / p->m : p->ngroup - 1;
  *j = n - g * p->m;
  return g;
}

static tsr_grid_meta meta_of(const pr *p, int k) {
  const tsr_case *c = p->c;
  return (tsr_grid_meta){c->dim, {c->cells[0], c->cells[1], c->cells[2]},
                         {c->lo[0], c->lo[1], c->lo[2]}, {c->hi[0], c->hi[1], c->hi[2]},
                         0.0, k, c->precision == TSR_PRECISION_SINGLE};
}

static char **field_names(const pr *p, int from, int count) {
  const tsr_case *c = p->c;
  char **names = calloc((size_t)count * (size_t)c->ncomp, sizeof *names);
  for (int i = 0; names && i < count * c->ncomp; ++i) {
    const int n = from + i / c->ncomp, q = i % c->ncomp;
    char buf[96];
    snprintf(buf, sizeof buf, "%s_s%d", tsr_models[c->model].comp[q], n);
    if (!(names[i] = strdup(buf))) {
      for (int k = 0; k < i; ++k) free(names[k]);
      free(names);
      return NULL;
    }
  }
  return names;
}

static void free_names(char **names, int n) {
  for (int i = 0; names && i < n; ++i) free(names[i]);
  free(names);
}

static int newest_first(const void *a, const void *b) {
  const int x = *(const int *)a, y = *(const int *)b;
  return (x < y) - (x > y);
}

/* Removes the parareal checkpoints of dir older than the newest keep, k (just written) among
 * them: listed, not stepped back from k by checkpoint_every, since a stop writes the
 * checkpoint of whichever iteration it kept (and a restart goes on from there). */
static void prune(const char *dir, int k, int keep) {
  DIR *d = opendir(dir);
  int *it = malloc(sizeof *it * 4096), n = 0;
  for (struct dirent *e; d && it && (e = readdir(d)) && n < 4096;) {
    int v, len = 0;
    if (sscanf(e->d_name, "parareal_%d.h5%n", &v, &len) == 1 && len > 0 &&
        e->d_name[len] == '\0' && v >= 1 && v <= k)
      it[n++] = v;
  }
  if (d) closedir(d);
  if (it) qsort(it, (size_t)n, sizeof *it, newest_first);
  for (int i = keep < 1 ? 1 : keep; i < n; ++i) {
    char o[4200], on[64];
    file_name(on, sizeof on, it[i]);
    snprintf(o, sizeof o, "%s/%s", dir, on);
    unlink(o);
  }
  free(it);
}

static tsr_err write_file(pr *p, int k, double *all) {
  tsr_run_ctx *x = &p->fx[0];
  const tsr_case *c = p->c;
  const int nf = (p->P + 1) * c->ncomp;
  const int64_t cells = tsr_box_cells(&x->box);
  char **names = field_names(p, 0, p->P + 1);
  const double **data = calloc((size_t)nf, sizeof *data);
  char *text = tsr_case_record(c);
  tsr_err err = TSR_OK;
  if (!names || !data || !text) err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory");
  for (int i = 0; !err && i < nf; ++i) data[i] = all + (size_t)i * (size_t)cells;
  char name[64], path[4200];
  file_name(name, sizeof name, k);
  snprintf(path, sizeof path, "%s/%s", x->out_dir, name);
  /* the slices, the iteration, and the time plan the slices cut (fine steps, dt's bits) */
  int64_t ints[4] = {p->P, k, p->step_of[p->P], 0};
  memcpy(&ints[3], &x->dt, sizeof x->dt);
  const tsr_output_attr more = {"parareal", NULL, 0.0, ints, 4};
  tsr_grid_meta meta = meta_of(p, k);
  if (!err)
    err = tsr_checkpoint_write_file_more(x->comm, path, &meta, TSR_OUTPUT_IO_SERIAL, 1, x->dt,
                                         text, tsr_case_restart_hash(c), &x->box, nf,
                                         (const char *const *)names, data, NULL, NULL, &more, 1);
  if (!err && x->rank == 0) {
    err = tsr_checkpoint_set_latest(x->out_dir, name);
    prune(x->out_dir, k, c->output.keep);
  }
  free_names(names, nf);
  free(data);
  free(text);
  return tsr_run_agree(x->comm, err);
}

/* The states go to the last group over MPI through host memory, on GPUs too: a checkpoint
 * is written from the host, and once per output.checkpoint_every iterations, not per sweep
 * (the sweeps' transfers are the link's, link.h). */
tsr_err tsr_pr_checkpoint(pr *p, int k) {
  tsr_run_ctx *x = &p->fx[0];
  const double t0 = MPI_Wtime();
  const int nc = p->c->ncomp;
  const int64_t cells = tsr_box_cells(&x->box), one = cells * nc;
  double *all = last_group(p) ? malloc(sizeof(double) * (size_t)one * (size_t)(p->P + 1)) : NULL;
  tsr_err err = last_group(p) && !all
                    ? tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                                  "out of memory for parareal's checkpoint (%d states)", p->P + 1)
                    : TSR_OK;
  err = tsr_run_agree(p->world, err);
  for (int n = 0; !err && n <= p->P; ++n) {
    int j;
    const int g = owner(p, n, &j);
    if (g == p->group) {
      double *dst = last_group(p) ? all + (size_t)n * (size_t)one : p->sbuf;
      for (int q = 0; q < nc && !err; ++q) err = x->be->download(x, p->in[j], q, dst + q * cells);
      if (!err && !last_group(p) &&
          MPI_Send(p->sbuf, (int)one, MPI_DOUBLE, (p->ngroup - 1) * p->nspace + p->srank, 9,
                   p->world) != MPI_SUCCESS)
        err = tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__, "MPI_Send of a checkpoint's state");
    } else if (last_group(p)) {
      if (MPI_Recv(all + (size_t)n * (size_t)one, (int)one, MPI_DOUBLE, g * p->nspace + p->srank,
                   9, p->world, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        err = tsr_err_set(TSR_ERR_MPI, __FILE__, __LINE__, "MPI_Recv of a checkpoint's state");
    }
  }
  if (!err && last_group(p)) err = write_file(p, k, all);
  free(all);
  TSR_CALL(tsr_run_agree(p->world, err));
  /* for the wall time's margin (halt.c): the write's time, the gathers included */
  if (MPI_Wtime() - t0 > p->h.write_longest) p->h.write_longest = MPI_Wtime() - t0;
  return TSR_OK;
}

/* The files a restart tries, newest first: the one --restart names; for "latest", the one
 * DIR/latest names and then the older parareal_<k>.h5 still there (keep), so that a damaged
 * newest file costs the iterations since the one before, not the run. On world rank 0, which
 * reads the directory, then broadcast. */
enum { MAX_CAND = 16 };
static tsr_err restart_paths(const pr *p, char path[][4200], int *n) {
  const tsr_run_ctx *x = &p->fx[0];
  *n = 0;
  char name[256] = "";
  int k = 0;
  if (p->rank == 0) tsr_checkpoint_get_latest(x->out_dir, name, sizeof name);
  MPI_Bcast(name, (int)sizeof name, MPI_CHAR, 0, p->world);
  /* a finished run's final.h5 (which the explicit method continues) holds one state at the
   * end: parareal's slices start from the case's initial values at t = 0 */
  int final = 0;
  if (p->rank == 0 && !name[0]) {
    char f[4200];
    snprintf(f, sizeof f, "%s/final.h5", x->out_dir);
    final = access(f, F_OK) == 0;
  }
  MPI_Bcast(&final, 1, MPI_INT, 0, p->world);
  TSR_CHECK(name[0] || !final, TSR_ERR_INPUT,
            "--restart latest: '%s' holds final.h5 of a run that ended and no parareal "
            "checkpoint: a parareal run starts from the initial values at t = 0 and continues "
            "only its own parareal_<iteration>.h5; continue the ended run without time slices "
            "(--set decomposition.time_slices=1 with the later time.end or time.steps), or run "
            "the case again from the start", x->out_dir);
  TSR_CHECK(name[0], TSR_ERR_INPUT,
            "--restart latest: no checkpoint in '%s' (its file latest is missing); run the case "
            "from the start without --restart", x->out_dir);
  TSR_CHECK(sscanf(name, "parareal_%d.h5", &k) == 1, TSR_ERR_INPUT,
            "--restart latest: '%s/latest' names %s, a checkpoint of the run without time slices; "
            "a parareal run continues only from its own parareal_<iteration>.h5: run it from "
            "the start without --restart, or with decomposition.time_slices: 1", x->out_dir, name);
  snprintf(path[(*n)++], sizeof path[0], "%s/%s", x->out_dir, name);
  int older[MAX_CAND], nolder = 0;
  if (p->rank == 0)
    for (int j = k - 1; j >= 1 && nolder < MAX_CAND - 1; --j) {
      char f[4200], fn[64];
      file_name(fn, sizeof fn, j);
      snprintf(f, sizeof f, "%s/%s", x->out_dir, fn);
      if (access(f, F_OK) == 0) older[nolder++] = j;
    }
  MPI_Bcast(&nolder, 1, MPI_INT, 0, p->world);
  MPI_Bcast(older, nolder, MPI_INT, 0, p->world);
  for (int i = 0; i < nolder; ++i) {
    char fn[64];
    file_name(fn, sizeof fn, older[i]);
    snprintf(path[(*n)++], sizeof path[0], "%s/%s", x->out_dir, fn);
  }
  return TSR_OK;
}

/* Reads the states of one file into this group's in[] (a collective over the world). */
static tsr_err restart_from(pr *p, const char *path, int *k, int *refused) {
  tsr_run_ctx *x = &p->fx[0];
  const int nc = p->c->ncomp, m = p->m;
  *refused = 0;
  int64_t ints[4] = {0, 0, 0, 0};
  int nint = 0;
  tsr_err err = tsr_output_read_ints(p->world, path, "parareal", ints, 4, &nint);
  if (err)
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "'%s' is not a valid parareal checkpoint (%s)", path, tsr_err_message());
  TSR_CHECK(nint == 2 || nint == 4, TSR_ERR_INPUT,
            "'%s' is not a parareal checkpoint (no attribute parareal); a parareal run continues "
            "only from its own parareal_<iteration>.h5", path);
  /* an iteration's checkpoint is written after it, at most the last (stopped there) */
  TSR_CHECK(ints[1] >= 1 && ints[1] <= p->c->parareal.max_iterations, TSR_ERR_INPUT,
            "'%s' is not a valid parareal checkpoint: its attribute parareal says iteration "
            "%" PRId64 ", and this run's iterations are 1 to %d (parareal.max_iterations)", path,
            ints[1], p->c->parareal.max_iterations);
  if (ints[0] != p->P) *refused = 1; /* the run's choice, the same in every older file */
  TSR_CHECK(ints[0] == p->P, TSR_ERR_INPUT,
            "checkpoint '%s' holds the states of %" PRId64 " time slices and this run has %d "
            "(decomposition.time_slices); restart with time_slices: %" PRId64 ", or run from "
            "the start", path, ints[0], p->P, ints[0]);
  /* the states are at the slices' start times, which the time plan sets: another end (or
   * step) would take them for other times. (Files of session 39 and before lack the plan.) */
  double dt = 0.0;
  memcpy(&dt, &ints[3], sizeof dt);
  const int64_t steps = p->step_of[p->P];
  if (nint == 4 && (ints[2] != steps || dt != x->dt)) *refused = 1;
  TSR_CHECK(nint < 4 || (ints[2] == steps && dt == x->dt), TSR_ERR_INPUT,
            "checkpoint '%s' holds the slice starts of a run of %" PRId64 " fine steps of dt %.9g "
            "(to t = %.9g) and this run takes %" PRId64 " of dt %.9g: the slices cut the run's "
            "time span, so a parareal checkpoint continues only with the time.end (or "
            "time.steps) and time.dt that wrote it; to go past the end, continue the ended "
            "run's final.h5 without time slices (--set decomposition.time_slices=1)", path,
            ints[2], dt, (double)ints[2] * dt, steps, x->dt);
  /* this group's start states and end: slices s0 .. s0 + m */
  const int64_t cells = tsr_box_cells(&x->box);
  char **names = field_names(p, p->s0, m + 1);
  double *buf = malloc(sizeof(double) * (size_t)cells * (size_t)nc * (size_t)(m + 1));
  double **data = calloc((size_t)(m + 1) * (size_t)nc, sizeof *data);
  err = !names || !buf || !data ? tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory")
                                : TSR_OK;
  for (int i = 0; !err && i < (m + 1) * nc; ++i) data[i] = buf + (size_t)i * (size_t)cells;
  tsr_checkpoint_info info = {0};
  if (!err)
    err = tsr_checkpoint_read(x->comm, path, (m + 1) * nc, (const char *const *)names, &x->box,
                              data, &info, tsr_run_restart_accept, x);
  for (int j = 0; !err && j <= m; ++j)
    for (int q = 0; q < nc && !err; ++q) err = x->be->upload(x, p->in[j], q, data[j * nc + q]);
  free_names(names, (m + 1) * nc);
  free(buf);
  free(data);
  int mine = info.refused, any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, p->world);
  *refused |= any;
  TSR_CALL(tsr_run_agree(p->world, err));
  *k = (int)ints[1];
  return TSR_OK;
}

/* tsr_pr_restart's reader for tsr_checkpoint_first */
typedef struct {
  pr *p;
  int *k;
} restart_arg;

static tsr_err read_one(const char *path, int *refused, char *at, size_t n, void *arg) {
  restart_arg *a = arg;
  tsr_err err = restart_from(a->p, path, a->k, refused);
  if (!err) snprintf(at, n, "iteration %d", *a->k);
  return err;
}

tsr_err tsr_pr_restart(pr *p, int *k) {
  const char *spec = p->fx[0].opts.restart;
  char(*path)[4200] = malloc(MAX_CAND * sizeof *path);
  TSR_CHECK(path, TSR_ERR_MEMORY, "out of memory");
  int n = 0, used = -1, refused = 0;
  tsr_err err = TSR_OK;
  if (strcmp(spec, "latest") != 0) {
    snprintf(path[0], sizeof path[0], "%s", spec);
    err = restart_from(p, path[0], k, &refused);
    used = 0;
  } else {
    err = tsr_run_agree(p->world, restart_paths(p, path, &n));
    const char *paths[MAX_CAND];
    for (int i = 0; i < n; ++i) paths[i] = path[i];
    restart_arg a = {p, k};
    if (!err)
      err = tsr_checkpoint_first(p->rank == 0, p->fx[0].out_dir, n, paths, 1, 1, read_one, &a,
                                 &used);
  }
  char from[4200] = "";
  if (used >= 0) snprintf(from, sizeof from, "%s", path[used]);
  free(path);
  TSR_CALL(err);
  for (int j = 0; j < p->m; ++j) { /* G of the states as they are: what the last sweep left */
    TSR_CALL(tsr_run_agree(p->world, tsr_pr_coarse_solve(p, j)));
    tsr_field *t = p->gold[j];
    p->gold[j] = p->gnew;
    p->gnew = t;
    p->fresh[j] = 0;
  }
  if (p->rank == 0) {
    printf("restart: parareal iteration %d from %s\n", *k, from);
    fflush(stdout);
  }
  return TSR_OK;
}
