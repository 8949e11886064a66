/* XDMF sidecar for the HDF5 fields file, and the file-system helpers both writers share. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io/output.h"
#include "io/output_internal.h"

/* The newest temporary names of this process, for tsr_output_remove_tmp_files: a ring, as
 * only the last few can still be open (one write at a time per thread, and few threads). A
 * slot is marked ready only once its name is whole, so a handler never reads half a name. */
#define TMP_SLOTS 16
static char tmp_slot[TMP_SLOTS][4200];
static volatile sig_atomic_t tmp_ready[TMP_SLOTS];
static unsigned tmp_next;

/* 1 once tsr_output_remove_tmp_files began: the process is ending, and no new temporary name
 * is given out (a thread asking for one waits for the end instead of creating the file). */
static volatile sig_atomic_t tmp_frozen;

void tsr_output_tmp_track(const char *tmp) {
  while (tmp_frozen) pause();
  unsigned i = __atomic_fetch_add(&tmp_next, 1u, __ATOMIC_RELAXED) % TMP_SLOTS;
  tmp_ready[i] = 0;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  snprintf(tmp_slot[i], sizeof tmp_slot[i], "%s", tmp);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  tmp_ready[i] = strlen(tmp) < sizeof tmp_slot[i];
}

void tsr_output_remove_tmp_files(void) {
  tmp_frozen = 1;
  /* a name already renamed into place, or removed, is gone: unlink fails harmlessly. Another
   * thread may have taken its name just before and create the file only now (a background
   * checkpoint's latest.tmp outlived the first pass in CI): a second pass after it had the
   * time (nanosleep and unlink are async-signal-safe) */
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < TMP_SLOTS; ++i)
      if (tmp_ready[i]) unlink(tmp_slot[i]);
    if (pass == 0) nanosleep(&(struct timespec){0, 100000000}, NULL);
  }
}

char *tsr_output_tmp_name(const char *path) {
  size_t n = strlen(path);
  char *tmp = malloc(n + 5);
  if (!tmp) {
    tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory naming '%s.tmp'", path);
    return NULL;
  }
  memcpy(tmp, path, n);
  memcpy(tmp + n, ".tmp", 5);
  tsr_output_tmp_track(tmp);
  return tmp;
}

int tsr_output_dir_problem(const char *path, char *buf, size_t n) {
  char dir[4096];
  const char *slash = strrchr(path, '/');
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (slash == path) snprintf(dir, sizeof dir, "/");
  else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
  struct stat st;
  if (stat(dir, &st) != 0) {
    snprintf(buf, n, "directory '%s' %s", dir,
             errno == ENOENT ? "does not exist" : strerror(errno));
    return 1;
  }
  if (!S_ISDIR(st.st_mode)) {
    snprintf(buf, n, "'%s' is not a directory", dir);
    return 1;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    snprintf(buf, n, "directory '%s' is not writable", dir);
    return 1;
  }
  return 0;
}

tsr_err tsr_output_write_error(const char *path, int e) {
  if (e == ENOSPC || e == EDQUOT)
    return tsr_err_set(TSR_ERR_IO, __FILE__, __LINE__,
                       "cannot write '%s': no space left on device; free space there or write "
                       "elsewhere (--out DIR or output.dir)",
                       path);
  return tsr_err_set(TSR_ERR_IO, __FILE__, __LINE__, "cannot write '%s': %s; " TSR_OUTPUT_DIR_ADVICE,
                     path, strerror(e));
}

tsr_err tsr_output_commit(const char *tmp, const char *path) {
  if (rename(tmp, path) == 0) return TSR_OK;
  int e = errno;
  remove(tmp);
  return tsr_err_set(TSR_ERR_IO, __FILE__, __LINE__,
                     "cannot write '%s': renaming '%s' failed: %s; " TSR_OUTPUT_DIR_ADVICE, path,
                     tmp, strerror(e));
}

/* Names and paths go into attribute values and text; '&', '<' and quotes would break XML. */
static void xml_text(FILE *fp, const char *s) {
  for (; *s; ++s) {
    switch (*s) {
    case '&': fputs("&amp;", fp); break;
    case '<': fputs("&lt;", fp); break;
    case '>': fputs("&gt;", fp); break;
    case '"': fputs("&quot;", fp); break;
    case '\'': fputs("&apos;", fp); break;
    default: fputc(*s, fp);
    }
  }
}

/* XDMF lists every axis slowest first (z y x), the reverse of tessera's (x y z). A 2D grid is
 * written as one layer of cells across z: ParaView's XDMF readers put a 2DCoRectMesh in the y-z
 * plane (tessera's x along ParaView's y), and take cell data of a 3D mesh only when its
 * DataItem has three dimensions, so the layer's count, 1, comes first (the HDF5 dataset is 2D;
 * XDMF reads its values in order). */
static void slowest_first_int(FILE *fp, int dim, const int *v, int add) {
  if (dim == 2) fprintf(fp, "%d ", 1 + add);
  for (int d = dim - 1; d >= 0; --d) fprintf(fp, d == dim - 1 ? "%d" : " %d", v[d] + add);
}

/* One uniform <Grid> at indent in (spaces): the cell data of h5_name at meta's time, stored
 * with precision bytes per value (8: float64, 4: float32). */
static void write_grid(FILE *fp, int in, const char *grid_name, const char *h5_name,
                       const tsr_grid_meta *m, int precision, int nfield,
                       const char *const *names) {
  int dim = m->dim;
  double spacing[3], origin[3];
  for (int d = 0; d < dim; ++d) {
    spacing[d] = (m->hi[d] - m->lo[d]) / m->cells[d];
    origin[d] = m->lo[d];
  }
  if (dim == 2) {
    /* the layer of a 2D grid: as thick as its finer cells, its centres on z = 0 */
    spacing[2] = spacing[0] < spacing[1] ? spacing[0] : spacing[1];
    origin[2] = -0.5 * spacing[2];
  }
  fprintf(fp, "%*s<Grid Name=\"", in, "");
  xml_text(fp, grid_name);
  fputs("\" GridType=\"Uniform\">\n", fp);
  fprintf(fp, "%*s  <Time Value=\"%.17g\"/>\n", in, "", m->time);
  /* CoRectMesh dimensions count nodes, one more than cells on each axis */
  fprintf(fp, "%*s  <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"", in, "");
  slowest_first_int(fp, dim, m->cells, 1);
  fprintf(fp, "\"/>\n%*s  <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n", in, "");
  for (int item = 0; item < 2; ++item) {
    const double *v = item == 0 ? origin : spacing;
    fprintf(fp,
            "%*s    <DataItem Name=\"%s\" Dimensions=\"3\" NumberType=\"Float\" "
            "Precision=\"8\" Format=\"XML\">",
            in, "", item == 0 ? "Origin" : "Spacing");
    for (int d = 2; d >= 0; --d) fprintf(fp, d == 2 ? "%.17g" : " %.17g", v[d]);
    fputs("</DataItem>\n", fp);
  }
  fprintf(fp, "%*s  </Geometry>\n", in, "");
  for (int f = 0; f < nfield; ++f) {
    fprintf(fp, "%*s  <Attribute Name=\"", in, "");
    xml_text(fp, names[f]);
    fprintf(fp, "\" AttributeType=\"Scalar\" Center=\"Cell\">\n%*s    <DataItem Dimensions=\"",
            in, "");
    slowest_first_int(fp, dim, m->cells, 0);
    fprintf(fp, "\" NumberType=\"Float\" Precision=\"%d\" Format=\"HDF\">", precision);
    xml_text(fp, h5_name);
    fputs(":/fields/", fp);
    xml_text(fp, names[f]);
    fprintf(fp, "</DataItem>\n%*s  </Attribute>\n", in, "");
  }
  fprintf(fp, "%*s</Grid>\n", in, "");
}

static const char xdmf_head[] = "<?xml version=\"1.0\" ?>\n"
                                "<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n"
                                "<Xdmf Version=\"3.0\" xmlns:xi=\"http://www.w3.org/2001/XInclude\">\n"
                                "  <Domain>\n";
static const char xdmf_tail[] = "  </Domain>\n</Xdmf>\n";

typedef struct {
  const char *h5_name;
  const tsr_grid_meta *meta;
  int nfield;
  const char *const *names;
  int nstep;
  const tsr_xdmf_step *steps;
} xdmf_doc;

/* The one grid sits in a temporal collection too: ParaView's Xdmf3 readers take a time only
 * from a collection, and would show the final state at time 0. */
static void write_single(FILE *fp, const xdmf_doc *d) {
  fputs(xdmf_head, fp);
  fputs("    <Grid Name=\"final\" GridType=\"Collection\" CollectionType=\"Temporal\">\n", fp);
  write_grid(fp, 6, "fields", d->h5_name, d->meta, d->meta->single ? 4 : 8, d->nfield, d->names);
  fputs("    </Grid>\n", fp);
  fputs(xdmf_tail, fp);
}

static void write_series(FILE *fp, const xdmf_doc *d) {
  fputs(xdmf_head, fp);
  fputs("    <Grid Name=\"snapshots\" GridType=\"Collection\" CollectionType=\"Temporal\">\n", fp);
  for (int i = 0; i < d->nstep; ++i) {
    const tsr_xdmf_step *s = &d->steps[i];
    tsr_grid_meta m = *d->meta;
    m.time = s->time;
    m.step = s->step;
    /* the grid is named after its file: readers of the series (a restart) find both */
    char name[4096];
    snprintf(name, sizeof name, "%s", s->h5_name);
    char *dot = strrchr(name, '.');
    if (dot && strcmp(dot, ".h5") == 0) *dot = '\0';
    write_grid(fp, 6, name, s->h5_name, &m, s->precision, d->nfield, d->names);
  }
  fputs("    </Grid>\n", fp);
  fputs(xdmf_tail, fp);
}

static tsr_err check_grid_args(const char *xmf_path, const tsr_grid_meta *meta, int nfield,
                               const char *const *names) {
  TSR_CHECK(meta->dim == 2 || meta->dim == 3, TSR_ERR_INTERNAL,
            "cannot write '%s': grid dimension %d is not 2 or 3", xmf_path, meta->dim);
  for (int d = 0; d < meta->dim; ++d)
    TSR_CHECK(meta->cells[d] >= 1, TSR_ERR_INTERNAL,
              "cannot write '%s': grid has %d cells on axis %d", xmf_path, meta->cells[d], d);
  TSR_CHECK(nfield >= 0 && (nfield == 0 || names), TSR_ERR_INTERNAL,
            "cannot write '%s': %d fields without names", xmf_path, nfield);
  for (int f = 0; f < nfield; ++f)
    TSR_CHECK(names[f] && names[f][0], TSR_ERR_INTERNAL,
              "cannot write '%s': field %d has no name", xmf_path, f);
  return TSR_OK;
}

/* Writes the document to xmf_path + ".tmp", flushes it to the disk and renames it. */
static tsr_err write_atomic(const char *xmf_path, void (*body)(FILE *, const xdmf_doc *),
                            const xdmf_doc *doc) {
  char *tmp = tsr_output_tmp_name(xmf_path);
  if (!tmp) return TSR_ERR_MEMORY;
  FILE *fp = fopen(tmp, "w");
  if (!fp) {
    int e = errno;
    char why[4200];
    if (!tsr_output_dir_problem(xmf_path, why, sizeof why)) snprintf(why, sizeof why, "%s", strerror(e));
    free(tmp);
    return tsr_err_set(TSR_ERR_IO, __FILE__, __LINE__,
                       "cannot write '%s': %s; " TSR_OUTPUT_DIR_ADVICE, xmf_path, why);
  }
  body(fp, doc);
  /* flush to the disk before the rename so that a crash never leaves a renamed empty file */
  int bad = fflush(fp) != 0 || ferror(fp) || fsync(fileno(fp)) != 0;
  int e = errno;
  bad |= fclose(fp) != 0;
  if (bad) {
    remove(tmp);
    free(tmp);
    return tsr_output_write_error(xmf_path, e);
  }
  tsr_err err = tsr_output_commit(tmp, xmf_path);
  free(tmp);
  return err;
}

tsr_err tsr_output_write_xdmf(const char *xmf_path, const char *h5_name,
                              const tsr_grid_meta *meta, int nfield, const char *const *names) {
  TSR_CHECK(xmf_path && h5_name && meta, TSR_ERR_INTERNAL, "tsr_output_write_xdmf: NULL argument");
  TSR_CALL(check_grid_args(xmf_path, meta, nfield, names));
  xdmf_doc doc = {h5_name, meta, nfield, names, 0, NULL};
  return write_atomic(xmf_path, write_single, &doc);
}

tsr_err tsr_output_write_xdmf_series(const char *xmf_path, const tsr_grid_meta *grid, int nstep,
                                     const tsr_xdmf_step *steps, int nfield,
                                     const char *const *names) {
  TSR_CHECK(xmf_path && grid && (nstep == 0 || steps), TSR_ERR_INTERNAL,
            "tsr_output_write_xdmf_series: NULL argument");
  TSR_CALL(check_grid_args(xmf_path, grid, nfield, names));
  for (int i = 0; i < nstep; ++i)
    TSR_CHECK(steps[i].h5_name && (steps[i].precision == 4 || steps[i].precision == 8),
              TSR_ERR_INTERNAL, "cannot write '%s': entry %d has no file or precision %d",
              xmf_path, i, steps[i].precision);
  xdmf_doc doc = {NULL, grid, nfield, names, nstep, steps};
  return write_atomic(xmf_path, write_series, &doc);
}
