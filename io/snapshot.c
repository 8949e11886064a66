/* Snapshot series: fields files through io/output.c, the XDMF collection through
 * io/output_xdmf.c (io/snapshot.h). */
#define _POSIX_C_SOURCE 200809L

#include "io/snapshot.h"

#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

#include "io/output_internal.h"
#include "io/text.h"

#define PATH_MAX_ 4096
#define SERIES_FILE "snapshots.xmf"

typedef struct {
  int64_t step;
  double time;
  int precision; /* bytes per value */
} entry;

struct tsr_snapshot_series {
  MPI_Comm comm;
  int rank;
  char dir[PATH_MAX_];
  tsr_snapshot_opts opts;
  tsr_grid_meta grid;
  int nfield;
  const char *const *names;
  entry *e; /* rank 0: the series, by step */
  int n, cap;
  int dropped; /* entries of an earlier run dropped at open: the file needs rewriting */
  int removed; /* snapshot files past the restart step deleted at open */
  int warned;  /* values past float32's range were said once (float32 snapshots) */
};

static void file_name(char *buf, size_t n, int64_t step) {
  snprintf(buf, n, "snapshot_%08" PRId64 ".h5", step);
}

static int add(tsr_snapshot_series *s, entry e) {
  int at = 0;
  while (at < s->n && s->e[at].step < e.step) ++at;
  if (at < s->n && s->e[at].step == e.step) {
    s->e[at] = e;
    return 1;
  }
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 16;
    entry *p = realloc(s->e, (size_t)cap * sizeof *p);
    if (!p) return 0;
    s->e = p;
    s->cap = cap;
  }
  memmove(s->e + at + 1, s->e + at, (size_t)(s->n - at) * sizeof *s->e);
  s->e[at] = e;
  s->n++;
  return 1;
}

/* The whole of a small text file in a new string, or NULL (missing, unreadable). */
static char *slurp(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  char *buf = tsr_text_read_all(fp, NULL);
  fclose(fp);
  return buf;
}

/* The entries of a series file as output_xdmf.c writes it: each grid is named after its file
 * (<Grid Name="snapshot_<step>"), then its <Time Value=...>, then data items whose precision
 * precedes Format="HDF". Entries past from or whose file is gone are counted in s->dropped.
 * Returns 0 when out of memory. */
static int parse_series(tsr_snapshot_series *s, const char *text, int64_t from) {
  static const char grid_tag[] = "<Grid Name=\"snapshot_", time_tag[] = "<Time Value=\"",
                    hdf_tag[] = "\" Format=\"HDF\">";
  const char *p = strstr(text, grid_tag);
  while (p) {
    const char *next = strstr(p + 1, grid_tag);
    char *end;
    long long step = strtoll(p + strlen(grid_tag), &end, 10);
    const char *t = strstr(end, time_tag), *h = t ? strstr(t, hdf_tag) : NULL;
    if (*end == '"' && step >= 0 && t && h && (!next || h < next) && h[-1] >= '1' &&
        h[-1] <= '8') {
      entry e = {step, strtod(t + strlen(time_tag), NULL), h[-1] - '0'};
      char name[64], path[PATH_MAX_ + 64];
      file_name(name, sizeof name, e.step);
      snprintf(path, sizeof path, "%s/%s", s->dir, name);
      if (e.step > from || access(path, R_OK) != 0) s->dropped++;
      else if (!add(s, e)) return 0;
    }
    p = next;
  }
  return 1;
}

/* The step of a snapshot file's name, snapshot_<digits>.h5 (tmp: with ".tmp" after it), or -1. */
static long long step_of(const char *name, int *tmp) {
  static const char pre[] = "snapshot_";
  if (strncmp(name, pre, sizeof pre - 1) != 0) return -1;
  const char *p = name + sizeof pre - 1;
  char *end;
  if (*p < '0' || *p > '9') return -1;
  long long step = strtoll(p, &end, 10);
  *tmp = strcmp(end, ".h5.tmp") == 0;
  return *tmp || strcmp(end, ".h5") == 0 ? step : -1;
}

/* Rank 0, on a restart at step from: deletes the snapshot files past from (and temporaries of
 * them) that an earlier, longer run left, so the directory holds no future of another run. */
static tsr_err remove_later(tsr_snapshot_series *s, int64_t from) {
  DIR *d = opendir(s->dir);
  if (!d) return TSR_OK; /* nothing to remove; writing there reports what is wrong */
  struct dirent *e;
  tsr_err err = TSR_OK;
  while (!err && (e = readdir(d))) {
    int tmp;
    long long step = step_of(e->d_name, &tmp);
    if (step <= from) continue;
    char path[PATH_MAX_ + 300];
    snprintf(path, sizeof path, "%s/%s", s->dir, e->d_name);
    if (remove(path) != 0)
      err = tsr_err_set(TSR_ERR_IO, __FILE__, __LINE__,
                        "cannot remove '%s', a snapshot after the restart step %" PRId64
                        " left by an earlier run: %s; remove it or restart into another "
                        "directory (--out DIR)",
                        path, from, strerror(errno));
    else if (!tmp)
      s->removed++;
  }
  closedir(d);
  return err;
}

/* Rank 0: snapshots.xmf from the entries. */
static tsr_err write_series(const tsr_snapshot_series *s) {
  char path[PATH_MAX_ + 32];
  snprintf(path, sizeof path, "%s/" SERIES_FILE, s->dir);
  tsr_xdmf_step *steps = calloc((size_t)(s->n ? s->n : 1), sizeof *steps);
  char(*h5)[64] = calloc((size_t)(s->n ? s->n : 1), sizeof *h5);
  tsr_err err = TSR_OK;
  if (!steps || !h5) {
    err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory writing '%s'", path);
  } else {
    for (int i = 0; i < s->n; ++i) {
      file_name(h5[i], sizeof h5[i], s->e[i].step);
      steps[i] = (tsr_xdmf_step){h5[i], s->e[i].time, s->e[i].step, s->e[i].precision};
    }
    err = tsr_output_write_xdmf_series(path, &s->grid, s->n, steps, s->nfield, s->names);
  }
  free(steps);
  free(h5);
  return err;
}

tsr_err tsr_snapshot_open(MPI_Comm comm, const char *dir, const tsr_grid_meta *grid, int nfield,
                          const char *const *names, int64_t from, const tsr_snapshot_opts *opts,
                          tsr_snapshot_series **out) {
  *out = NULL;
  tsr_snapshot_series *s = calloc(1, sizeof *s);
  tsr_err err = s ? TSR_OK
                  : tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory for snapshots");
  if (s) {
    s->comm = comm;
    MPI_Comm_rank(comm, &s->rank);
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    if (opts) s->opts = *opts;
    s->grid = *grid;
    s->nfield = nfield;
    s->names = names;
  }
  if (!err && s->rank == 0 && from >= 0) {
    char path[PATH_MAX_ + 32];
    snprintf(path, sizeof path, "%s/" SERIES_FILE, dir);
    char *text = slurp(path);
    if (text && !parse_series(s, text, from))
      err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory reading '%s'", path);
    free(text);
    if (!err) err = remove_later(s, from);
    if (!err && s->dropped) err = write_series(s);
  }
  err = tsr_output_agree(comm, err);
  if (err) {
    tsr_snapshot_close(&s);
    return err;
  }
  *out = s;
  return TSR_OK;
}

/* float32 snapshots: values the conversion turns into inf (|v| from FLT_MAX plus half its ulp
 * on round to nearest), counted over every rank; rank 0 says so once a series, with the first
 * field that has them. A warning, not an error: the run's state is right, only the file is
 * not (it was inf with exit 0 and nothing said). Collective. */
static void warn_overflow(tsr_snapshot_series *s, const char *name, const tsr_box *owned,
                          const double *const *data) {
  if (!s->opts.single || s->warned) return;
  enum { MAXF = 64 };
  long long mine[MAXF] = {0}, all[MAXF] = {0};
  const int nf = s->nfield < MAXF ? s->nfield : MAXF;
  const int64_t n = tsr_box_cells(owned);
  for (int f = 0; f < nf; ++f)
    for (int64_t i = 0; i < n; ++i)
      mine[f] += isfinite(data[f][i]) && fabs(data[f][i]) >= 0x1.ffffffp+127;
  MPI_Allreduce(mine, all, nf, MPI_LONG_LONG, MPI_SUM, s->comm);
  for (int f = 0; f < nf; ++f) {
    if (!all[f]) continue;
    s->warned = 1;
    if (s->rank == 0)
      fprintf(stderr, "tessera: warning: %s/%s: %lld value%s of %s past float32's range (about "
              "3.4e38) written as inf, as output.snapshot_precision: single stores them; use "
              "output.snapshot_precision: double to keep them (said once for the series; the "
              "run's state is not affected)\n", s->dir, name, all[f], all[f] == 1 ? "" : "s",
              s->names[f]);
    return;
  }
}

tsr_err tsr_snapshot_write(tsr_snapshot_series *s, int64_t step, double t, const tsr_box *owned,
                           const double *const *data) {
  TSR_CHECK(s && step >= 0, TSR_ERR_INTERNAL, "tsr_snapshot_write: bad argument");
  char name[64], path[PATH_MAX_ + 64];
  file_name(name, sizeof name, step);
  snprintf(path, sizeof path, "%s/%s", s->dir, name);
  warn_overflow(s, name, owned, data);
  tsr_grid_meta meta = s->grid;
  meta.time = t;
  meta.step = step;
  meta.single = s->opts.single;
  tsr_output_opts oo = {.force_serial = s->opts.serial_io};
  TSR_CALL(tsr_output_write_fields(s->comm, path, &meta, owned, s->nfield, s->names, data, &oo));
  tsr_err err = TSR_OK;
  if (s->rank == 0) {
    entry e = {step, t, s->opts.single ? 4 : 8};
    if (!add(s, e))
      err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory listing '%s'", path);
    else
      err = write_series(s);
  }
  return tsr_output_agree(s->comm, err);
}

int tsr_snapshot_count(const tsr_snapshot_series *s) { return s ? s->n : 0; }

int tsr_snapshot_removed(const tsr_snapshot_series *s) { return s ? s->removed : 0; }

void tsr_snapshot_close(tsr_snapshot_series **s) {
  if (!s || !*s) return;
  free((*s)->e);
  free(*s);
  *s = NULL;
}
