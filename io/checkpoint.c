/* Checkpoints: written through io/output.c with checksums, read back on any decomposition
 * (io/checkpoint.h). */
#define _POSIX_C_SOURCE 200809L

#include "io/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/output_internal.h"

#define PATH_MAX_ 4096
#define MAX_CAND 256

/* step of "checkpoint_<8 or more digits><rest>" with rest ".h5" (part 0: a checkpoint) or
 * starting ".part" (part 1: one of its parts, io/output_parts.c), or -1 for any other name */
static int64_t step_named(const char *name, int part) {
  const char *p = name + strlen("checkpoint_");
  if (strncmp(name, "checkpoint_", strlen("checkpoint_")) != 0) return -1;
  char *end;
  errno = 0;
  long long v = strtoll(p, &end, 10);
  if (end - p < 8 || errno || v < 0) return -1;
  if (part ? strncmp(end, ".part", 5) != 0 : strcmp(end, ".h5") != 0) return -1;
  for (const char *q = p; q < end; ++q)
    if (*q < '0' || *q > '9') return -1;
  return (int64_t)v;
}

static int64_t step_of(const char *name) { return step_named(name, 0); }

static int by_step_desc(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* Steps of the checkpoints in dir, newest first; the newest max. Returns the count (0 when dir
 * cannot be listed). */
static int list_steps(const char *dir, int64_t *steps, int max) {
  DIR *d = opendir(dir);
  if (!d || max < 1) {
    if (d) closedir(d);
    return 0;
  }
  int n = 0, low = 0; /* steps[low]: the oldest listed, which a newer one replaces when full */
  for (struct dirent *e; (e = readdir(d));) {
    int64_t s = step_of(e->d_name);
    if (s < 0 || (n == max && s <= steps[low])) continue;
    steps[n < max ? n++ : low] = s;
    if (n == max)
      for (int i = low = 0; i < n; ++i)
        if (steps[i] < steps[low]) low = i;
  }
  closedir(d);
  qsort(steps, (size_t)n, sizeof *steps, by_step_desc);
  return n;
}

static void file_name(char *buf, size_t n, int64_t step) {
  snprintf(buf, n, "checkpoint_%08" PRId64 ".h5", step);
}

char *tsr_checkpoint_path(char *buf, size_t n, const char *dir, int64_t step) {
  char name[64];
  file_name(name, sizeof name, step);
  snprintf(buf, n, "%s/%s", dir, name);
  return buf;
}

/* dir/latest := name, atomically. */
static tsr_err write_latest(const char *dir, const char *name) {
  char path[PATH_MAX_];
  snprintf(path, sizeof path, "%s/latest", dir);
  char *tmp = tsr_output_tmp_name(path);
  if (!tmp) return TSR_ERR_MEMORY;
  FILE *fp = fopen(tmp, "w");
  int ok = fp && fprintf(fp, "%s\n", name) > 0;
  int e = errno;
  if (fp && fclose(fp) != 0 && ok) {
    ok = 0;
    e = errno;
  }
  tsr_err err = TSR_OK;
  if (!ok) {
    err = tsr_output_write_error(path, e);
    remove(tmp);
  } else {
    err = tsr_output_commit(tmp, path);
  }
  free(tmp);
  return err;
}

/* What dir/latest names ("" when nothing), into line (n bytes). */
static void read_latest(const char *dir, char *line, size_t n) {
  char path[PATH_MAX_];
  snprintf(path, sizeof path, "%s/latest", dir);
  line[0] = '\0';
  FILE *fp = fopen(path, "r");
  if (!fp) return;
  if (!fgets(line, (int)n, fp)) line[0] = '\0';
  line[strcspn(line, "\r\n")] = '\0';
  fclose(fp);
}

tsr_err tsr_checkpoint_set_latest(const char *dir, const char *name) {
  return write_latest(dir, name);
}

void tsr_checkpoint_get_latest(const char *dir, char *name, size_t n) { read_latest(dir, name, n); }

/* Removes the parts of the checkpoints of dir that are neither among keep[0..nkeep) nor newer
 * than the newest of them: those of removed checkpoints, and those a failed write left. */
static void prune_parts(const char *dir, const int64_t *keep, int nkeep) {
  DIR *d = opendir(dir);
  if (!d) return;
  for (struct dirent *e; (e = readdir(d));) {
    int64_t s = step_named(e->d_name, 1);
    int kept = s < 0 || nkeep == 0 || s > keep[0];
    for (int i = 0; i < nkeep && !kept; ++i) kept = s == keep[i];
    if (kept) continue;
    char path[PATH_MAX_];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    remove(path);
  }
  closedir(d);
}

void tsr_checkpoint_prune(const char *dir, int keep) {
  if (keep < 1) keep = 1;
  int64_t steps[MAX_CAND], kept[MAX_CAND];
  /* the listing first, then latest: a checkpoint renamed in between is the newest, kept, and
   * latest names it only after its rename, so whatever latest names is never removed */
  int n = list_steps(dir, steps, MAX_CAND), nkept = 0;
  char latest[64];
  read_latest(dir, latest, sizeof latest);
  for (int i = 0; i < n; ++i) {
    char name[64], path[PATH_MAX_];
    file_name(name, sizeof name, steps[i]);
    if (i < keep || !strcmp(name, latest)) {
      kept[nkept++] = steps[i];
      continue;
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    remove(path);
  }
  /* a checkpoint's parts go after the file that maps them, so a file is never left without
   * its parts */
  prune_parts(dir, kept, nkept);
}

tsr_err tsr_checkpoint_write_file(MPI_Comm comm, const char *path, const tsr_grid_meta *meta,
                                  int io, int threads, double dt, const char *case_text,
                                  uint64_t case_hash, const tsr_box *owned, int nfield,
                                  const char *const *names, const double *const *data,
                                  const tsr_output_layout *layout,
                                  const tsr_rebalance_state *rebal) {
  return tsr_checkpoint_write_file_more(comm, path, meta, io, threads, dt, case_text, case_hash,
                                        owned, nfield, names, data, layout, rebal, NULL, 0);
}

tsr_err tsr_checkpoint_write_file_more(MPI_Comm comm, const char *path,
                                       const tsr_grid_meta *meta, int io, int threads, double dt,
                                       const char *case_text, uint64_t case_hash,
                                       const tsr_box *owned, int nfield,
                                       const char *const *names, const double *const *data,
                                       const tsr_output_layout *layout,
                                       const tsr_rebalance_state *rebal,
                                       const tsr_output_attr *more, int nmore) {
  if (nmore < 0 || !more) nmore = 0;
  if (nmore > TSR_CHECKPOINT_MAX_MORE)
    return tsr_err_set(TSR_ERR_INTERNAL, __FILE__, __LINE__,
                       "writing '%s': %d more attributes, at most %d", path, nmore,
                       TSR_CHECKPOINT_MAX_MORE);
  char hash[17];
  snprintf(hash, sizeof hash, "%016" PRIx64, case_hash);
  /* the decomposition that wrote it (lo x y z, hi x y z per rank): the datasets do not depend
   * on it, but a user or the rebalancer may want to know it */
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int64_t mine[6], *boxes = malloc((size_t)size * 6 * sizeof *boxes);
  for (int d = 0; d < 3; ++d) {
    mine[d] = owned->lo[d];
    mine[3 + d] = owned->hi[d];
  }
  tsr_err merr = tsr_output_agree(
      comm, boxes ? TSR_OK : tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                                             "out of memory writing '%s'", path));
  if (merr) {
    free(boxes);
    return merr;
  }
  MPI_Allgather(mine, 6, MPI_INT64_T, boxes, 6, MPI_INT64_T, comm);
  int64_t counts[2] = {rebal ? rebal->migrations : 0, rebal ? rebal->last_bytes : 0};
  tsr_output_attr attrs[6 + TSR_CHECKPOINT_MAX_MORE] = {
      {.name = "dt", .num = dt},
      {.name = "case_text", .str = case_text ? case_text : ""},
      {.name = "case_hash", .str = hash},
      {.name = "boxes", .ints = boxes, .nint = 6 * size},
      {.name = "rebalance_counts", .ints = counts, .nint = 2},
      {.name = "rebalance_seconds", .num = rebal ? rebal->last_seconds : 0}};
  int nattr = rebal ? 6 : 4;
  for (int i = 0; i < nmore; ++i) attrs[nattr++] = more[i];
  int parts = io == TSR_OUTPUT_IO_PARTS ||
              (io == TSR_OUTPUT_IO_AUTO && !tsr_output_parallel_available());
  tsr_output_opts oo = {.force_serial = io == TSR_OUTPUT_IO_SERIAL, .parts = parts,
                        .checksum = 1, .threads = threads, .nattr = nattr, .attrs = attrs,
                        .layout = layout};
  tsr_err werr = tsr_output_write_fields(comm, path, meta, owned, nfield, names, data, &oo);
  free(boxes);
  return werr;
}

tsr_err tsr_checkpoint_write(MPI_Comm comm, const char *dir, const tsr_grid_meta *meta,
                             int io, int threads, double dt, const char *case_text,
                             uint64_t case_hash, int keep,
                             const tsr_box *owned, int nfield, const char *const *names,
                             const double *const *data, const tsr_output_layout *layout,
                             const tsr_rebalance_state *rebal, const tsr_output_attr *more,
                             int nmore, int *committed) {
  if (committed) *committed = 0;
  char name[64], path[PATH_MAX_];
  file_name(name, sizeof name, meta->step);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int rank;
  MPI_Comm_rank(comm, &rank);
  tsr_err werr = tsr_checkpoint_write_file_more(comm, path, meta, io, threads, dt, case_text,
                                                case_hash, owned, nfield, names, data, layout,
                                                rebal, more, nmore);
  if (werr) {
    /* nothing of this checkpoint is left (the temporary is removed); say what still holds */
    tsr_err_append("the previous checkpoint and '%s/latest' are unchanged: once the cause is "
                   "fixed, continue with --restart latest", dir);
    return werr;
  }
  if (committed) *committed = 1;
  tsr_err err = TSR_OK;
  if (rank == 0) {
    err = write_latest(dir, name);
    if (err)
      tsr_err_append("'%s' itself is complete: once the cause is fixed, continue from it with "
                     "--restart %s", path, path);
    if (!err && keep >= 1) tsr_checkpoint_prune(dir, keep);
  }
  return tsr_output_agree(comm, err);
}

tsr_err tsr_checkpoint_read(MPI_Comm comm, const char *path, int nfield,
                            const char *const *names, const tsr_box *owned, double *const *data,
                            tsr_checkpoint_info *info, tsr_checkpoint_accept accept, void *arg) {
  memset(info, 0, sizeof *info);
  snprintf(info->path, sizeof info->path, "%s", path);
  tsr_grid_meta meta = {0};
  tsr_err err = tsr_output_read_attr(comm, path, "case_hash", info->case_hash,
                                     sizeof info->case_hash, NULL);
  if (!err) err = tsr_output_read_attr(comm, path, "dt", NULL, 0, &info->dt);
  if (!err) err = tsr_output_read_meta(comm, path, &meta);
  if (!err) {
    info->step = meta.step;
    info->time = meta.time;
    info->dim = meta.dim;
    for (int d = 0; d < 3; ++d) info->cells[d] = meta.cells[d];
  }
  /* what the attributes hold is checked before any method compares it with its run */
  if (!err && !(info->step >= 0 && isfinite(info->dt) && info->dt > 0.0 && isfinite(info->time)))
    err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                      "its attributes hold step %lld, dt %g and time %g, where a checkpoint has "
                      "a step >= 0, a dt > 0 and a finite time", (long long)info->step, info->dt,
                      info->time);
  if (!err && accept && (err = accept(info, arg)) != TSR_OK) {
    info->refused = 1;
    return err;
  }
  for (int f = 0; f < nfield && !err; ++f)
    err = tsr_output_read_field(comm, path, names[f], owned, data[f], f == 0 ? &meta : NULL);
  /* a state that is not finite would only stop the run later, with a message about its dt */
  const int64_t n = tsr_box_cells(owned);
  int bad = -1;
  for (int f = 0; f < nfield && !err && bad < 0; ++f)
    for (int64_t i = 0; i < n; ++i)
      if (!isfinite(data[f][i])) {
        bad = f;
        break;
      }
  if (!err) {
    int any = bad;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm);
    if (any >= 0)
      err = tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "field '%s' holds values that are "
                        "not finite (NaN or inf): the run had blown up when it wrote it, or the "
                        "file was damaged", names[any]);
  }
  if (!err) return TSR_OK;
  /* every failure is collective (agreed in io/output.c), so every rank rewrites alike */
  char why[4096];
  snprintf(why, sizeof why, "%s", tsr_err_message());
  if (strstr(why, "checksum") || strstr(why, "filter"))
    return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                       "checkpoint '%s': checksum error, the file is damaged (%s)", path, why);
  return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "'%s' is not a valid checkpoint (%s)",
                     path, why);
}

int tsr_checkpoint_candidates(const char *dir, char (*name)[64], int max, int *named) {
  char line[64];
  read_latest(dir, line, sizeof line);
  int n = 0;
  *named = max > 0 && step_of(line) >= 0;
  if (*named) snprintf(name[n++], sizeof name[0], "%s", line);
  int64_t *steps = max > 0 ? malloc(sizeof *steps * (size_t)max) : NULL;
  int ns = steps ? list_steps(dir, steps, max) : 0;
  for (int i = 0; i < ns && n < max; ++i) {
    char f[64];
    file_name(f, sizeof f, steps[i]);
    if (!*named || strcmp(f, name[0]) != 0) snprintf(name[n++], sizeof name[0], "%s", f);
  }
  free(steps);
  return n;
}

tsr_err tsr_checkpoint_first(int say, const char *dir, int n, const char *const *path, int named,
                             int lead, tsr_checkpoint_reader read, void *arg, int *used) {
  *used = -1;
  TSR_CHECK(n > 0, TSR_ERR_INPUT, "--restart latest: no checkpoint in '%s'; run without "
            "--restart, or name a checkpoint file", dir);
  char failed[4096] = "";
  for (int i = 0; i < n; ++i) {
    int refused = 0;
    char at[64] = "";
    tsr_err err = read(path[i], &refused, at, sizeof at, arg);
    if (!err) {
      *used = i;
      if (say && i >= lead) {
        printf("restart: %s; using the older '%s'%s%s%s\n",
               named ? "the checkpoint 'latest' names does not read" : "no usable 'latest'",
               path[i], at[0] ? " (" : "", at, at[0] ? ")" : "");
        fflush(stdout);
      }
      return TSR_OK;
    }
    if (refused) return err;
    size_t len = strlen(failed);
    snprintf(failed + len, sizeof failed - len, "\n  %s", tsr_err_message());
    if (say) {
      fprintf(stderr, "tessera: restart: skipping %s\n", tsr_err_message());
      fflush(stderr);
    }
  }
  return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__, "--restart latest: no checkpoint in "
                     "'%s' reads; run without --restart, or name a checkpoint file:%s", dir,
                     failed);
}

int tsr_checkpoint_count(MPI_Comm comm, const char *dir) {
  int rank, n = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0) {
    int64_t steps[MAX_CAND];
    n = list_steps(dir, steps, MAX_CAND);
  }
  MPI_Bcast(&n, 1, MPI_INT, 0, comm);
  return n;
}

/* A run that ended left final.h5, a checkpoint of its last step (tsr_checkpoint_write_file):
 * it goes first among the candidates of latest when it is at least as new as the newest
 * checkpoint, so a run continued to a later end starts where the earlier one ended. Returns 1
 * when it was put first. Collective. */
static int final_first(MPI_Comm comm, const char *dir, char (*cand)[64], int *ncand) {
  int rank, there = 0;
  MPI_Comm_rank(comm, &rank);
  char path[PATH_MAX_];
  snprintf(path, sizeof path, "%s/final.h5", dir);
  int64_t newest = -1;
  if (rank == 0) {
    struct stat st;
    there = stat(path, &st) == 0 && S_ISREG(st.st_mode);
    for (int i = 0; i < *ncand; ++i)
      if (step_of(cand[i]) > newest) newest = step_of(cand[i]);
  }
  MPI_Bcast(&there, 1, MPI_INT, 0, comm);
  MPI_Bcast(&newest, 1, MPI_INT64_T, 0, comm);
  tsr_grid_meta meta;
  /* a final.h5 that does not read is left to the candidates' reading, which names why */
  if (!there || (tsr_output_read_meta(comm, path, &meta) == TSR_OK && meta.step < newest) ||
      *ncand >= MAX_CAND)
    return 0;
  memmove(cand[1], cand[0], (size_t)*ncand * sizeof cand[0]);
  snprintf(cand[0], sizeof cand[0], "final.h5");
  ++*ncand;
  return 1;
}

/* tsr_checkpoint_load's reader: one file, collective */
typedef struct {
  MPI_Comm comm;
  int nfield;
  const char *const *names;
  const tsr_box *owned;
  double *const *data;
  tsr_checkpoint_info *info;
  tsr_checkpoint_accept accept;
  void *arg;
} load_arg;

static tsr_err load_one(const char *path, int *refused, char *at, size_t n, void *arg) {
  load_arg *a = arg;
  tsr_err err = tsr_checkpoint_read(a->comm, path, a->nfield, a->names, a->owned, a->data,
                                    a->info, a->accept, a->arg);
  *refused = err && a->info->refused;
  snprintf(at, n, "step %" PRId64, a->info->step);
  return err;
}

tsr_err tsr_checkpoint_load(MPI_Comm comm, const char *spec, const char *dir, int nfield,
                            const char *const *names, const tsr_box *owned, double *const *data,
                            tsr_checkpoint_info *info, tsr_checkpoint_accept accept, void *arg) {
  if (strcmp(spec, "latest") != 0)
    return tsr_checkpoint_read(comm, spec, nfield, names, owned, data, info, accept, arg);
  int rank;
  MPI_Comm_rank(comm, &rank);
  static char cand[MAX_CAND][64];
  int ncand = 0, named = 0;
  if (rank == 0) ncand = tsr_checkpoint_candidates(dir, cand, MAX_CAND, &named);
  MPI_Bcast(&ncand, 1, MPI_INT, 0, comm);
  MPI_Bcast(&named, 1, MPI_INT, 0, comm);
  MPI_Bcast(cand, (int)sizeof cand, MPI_CHAR, 0, comm);
  int fin = final_first(comm, dir, cand, &ncand);
  TSR_CHECK(ncand > 0, TSR_ERR_INPUT,
            "--restart latest: no checkpoint in '%s' (no checkpoint_*.h5 there, and no final.h5 "
            "of a run that ended); run with output.checkpoint_every first, or give a checkpoint "
            "file",
            dir);
  char(*path)[PATH_MAX_] = malloc(sizeof *path * (size_t)ncand);
  const char *paths[MAX_CAND];
  TSR_CHECK(path, TSR_ERR_MEMORY, "out of memory");
  for (int i = 0; i < ncand; ++i) {
    snprintf(path[i], sizeof path[i], "%s/%s", dir, cand[i]);
    paths[i] = path[i];
  }
  load_arg a = {comm, nfield, names, owned, data, info, accept, arg};
  int used;
  /* final.h5, put first, is where the run that ended left off: not an older file */
  const int lead = fin + named;
  tsr_err err = tsr_checkpoint_first(rank == 0, dir, ncand, paths, named, lead, load_one, &a,
                                     &used);
  if (!err && rank == 0 && used < lead) {
    printf("restart: from '%s' (step %" PRId64 ")%s\n", paths[used], info->step,
           fin && used == 0 ? ", where the earlier run ended" : "");
    fflush(stdout);
  }
  free(path);
  return err;
}

tsr_err tsr_checkpoint_case_text(MPI_Comm comm, const char *path, char **text) {
  return tsr_output_read_text(comm, path, "case_text", text);
}

tsr_err tsr_checkpoint_read_layout(MPI_Comm comm, const char *path, int nranks, tsr_box *boxes,
                                   int *found, tsr_rebalance_state *state, int *has_state) {
  *found = *has_state = 0;
  memset(state, 0, sizeof *state);
  int64_t *v = malloc((size_t)6 * (size_t)nranks * sizeof *v + 1);
  int n = 0;
  tsr_err err = v ? TSR_OK : tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,
                                         "out of memory reading '%s'", path);
  err = tsr_output_agree(comm, err);
  if (!err) err = tsr_output_read_ints(comm, path, "boxes", v, 6 * nranks, &n);
  if (!err && n == 6 * nranks) {
    for (int r = 0; r < nranks; ++r)
      for (int d = 0; d < 3; ++d) {
        boxes[r].lo[d] = (int)v[6 * r + d];
        boxes[r].hi[d] = (int)v[6 * r + 3 + d];
      }
    *found = 1;
  }
  int64_t counts[2];
  if (!err) err = tsr_output_read_ints(comm, path, "rebalance_counts", counts, 2, &n);
  if (!err && n == 2) {
    double sec = 0.0;
    err = tsr_output_read_attr(comm, path, "rebalance_seconds", NULL, 0, &sec);
    state->migrations = (int)counts[0];
    state->last_bytes = counts[1];
    state->last_seconds = sec;
    *has_state = !err;
  }
  free(v);
  return err;
}
