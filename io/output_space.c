/* Disk space for a fields file (io/output_internal.h): an estimate of its size, the check of
 * free space before the write, and the reservation that keeps a full disk out of the write. */
#define _GNU_SOURCE /* fallocate */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "io/output_internal.h"

void tsr_output_chunk_dims(int rank, const hsize_t *gdims, size_t chunk_bytes, hsize_t *chunk) {
  for (int i = 0; i < 3; ++i) chunk[i] = i < rank ? gdims[i] : 1;
  for (;;) {
    hsize_t n = 8, *big = &chunk[0];
    for (int i = 0; i < rank; ++i) {
      n *= chunk[i];
      if (chunk[i] > *big) big = &chunk[i];
    }
    if (n <= (chunk_bytes ? (hsize_t)chunk_bytes : (hsize_t)4 << 20) || *big == 1) break;
    *big = (*big + 1) / 2;
  }
}

double tsr_output_estimate(const tsr_grid_meta *m, int nfield, const tsr_output_opts *o) {
  hsize_t g[3], c[3];
  for (int i = 0; i < m->dim; ++i) g[i] = (hsize_t)m->cells[m->dim - 1 - i];
  double cells = 1; /* what the datasets' storage holds: whole chunks where chunked */
  if (o && o->checksum) {
    tsr_output_chunk_dims(m->dim, g, o->chunk_bytes, c);
    for (int i = 0; i < m->dim; ++i) cells *= (double)((g[i] + c[i] - 1) / c[i] * c[i]);
  } else {
    for (int i = 0; i < m->dim; ++i) cells *= (double)g[i];
  }
  double need = 8.0 * nfield * cells; /* float32 files take less */
  need += 65536.0 + 16384.0 * nfield; /* superblock, headers, chunk indexes, attributes */
  for (int i = 0; o && i < o->nattr; ++i)
    need += o->attrs[i].str ? (double)strlen(o->attrs[i].str) : 8.0 * o->attrs[i].nint;
  return need;
}

static void dir_of(const char *path, char *dir, size_t n) {
  const char *slash = strrchr(path, '/');
  if (!slash) snprintf(dir, n, ".");
  else snprintf(dir, n, "%.*s", slash == path ? 1 : (int)(slash - path), path);
}

/* Refuses a write that cannot fit before any byte of it is written: a full disk is the common
 * case of a failing write, and HDF5 reports it badly (under MPI-IO, not at all on every rank). */
tsr_err tsr_output_check_space(const char *path, double need) {
  char dir[4096];
  dir_of(path, dir, sizeof dir);
  struct statvfs fs;
  if (statvfs(dir, &fs) != 0) return TSR_OK; /* the open that follows says what is wrong */
  double have = (double)fs.f_bavail * (double)fs.f_frsize;
  TSR_CHECK(have >= need, TSR_ERR_IO,
            "cannot write '%s': no space left on device (%.3g MB needed, %.3g MB free in '%s'); "
            "free space there or write elsewhere (--out DIR or output.dir)",
            path, need / 1e6, have / 1e6, dir);
  return TSR_OK;
}

/* The disk may still fill between the check and the write (another job writing there). Under
 * MPI-IO a write that then fails on some ranks only (the aggregators, the metadata writer)
 * fails inside HDF5's collective calls (the fill of new chunks at a create, the metadata flush,
 * the close), which return early on those ranks while the others wait in them forever. The
 * blocks reserved here, past the end of the file, are the ones its writes then fill, so a full
 * disk is met here, on one rank, before any collective write. Where the file system has no
 * fallocate (EOPNOTSUPP) nothing is reserved. */
tsr_err tsr_output_reserve(const char *tmp, const char *path, double need, int *reserved) {
  if (reserved) *reserved = 1;
  int fd = open(tmp, O_WRONLY);
  if (fd < 0) return TSR_OK; /* the open for writing that follows says what is wrong */
  int e = fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)need) == 0 ? 0 : errno;
  close(fd);
  if (reserved && e && e != ENOSPC && e != EDQUOT) *reserved = 0;
  TSR_CHECK(e != ENOSPC && e != EDQUOT, TSR_ERR_IO,
            "cannot write '%s': no space left on device (%.3g MB needed); free space there or "
            "write elsewhere (--out DIR or output.dir)",
            path, need / 1e6);
  return TSR_OK;
}

void tsr_output_release_reserve(const char *tmp) {
  struct stat st;
  /* truncating to its own size gives back the reserved blocks the file did not use */
  if (stat(tmp, &st) == 0 && truncate(tmp, st.st_size) != 0) { /* the blocks stay reserved */
  }
}
