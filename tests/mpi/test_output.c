/* io/output on any number of ranks: write with one split, read back with another, bit for
 * bit, through the collective and the rank-by-rank paths; attributes; atomic files; errors
 * that every rank sees; the XDMF sidecar. Exits non-zero (MPI_Abort) on the first failure. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/output.h"
#include "tsr_version.h"

static int g_rank, g_size;
static char g_dir[256];

#define TSR_CHECK_SCRATCH
#include "tests/check.h"

/* Cells of the slab this rank owns when the grid is cut along axis into g_size pieces
 * (some empty when the axis has fewer cells than there are ranks). */
static tsr_box slab_box(int dim, const int cells[3], int axis) {
  tsr_box b = tsr_box_make(dim, cells);
  int n = cells[axis];
  b.lo[axis] = (int)((long)n * g_rank / g_size);
  b.hi[axis] = (int)((long)n * (g_rank + 1) / g_size);
  return b;
}

/* A value that names its field and global cell, with bits in every position. */
static double value(int f, const int cells[3], int i, int j, int k) {
  long gid = i + (long)cells[0] * (j + (long)cells[1] * k);
  return (double)gid / 3.0 + 1000.0 * f - 0.1;
}

static double *fill(int f, const int cells[3], const tsr_box *b) {
  double *v = malloc(sizeof(double) * (size_t)(tsr_box_cells(b) + 1));
  CHECK(v, "out of memory");
  long n = 0;
  if (!tsr_box_empty(b))
    for (int k = b->lo[2]; k < b->hi[2]; ++k)
      for (int j = b->lo[1]; j < b->hi[1]; ++j)
        for (int i = b->lo[0]; i < b->hi[0]; ++i) v[n++] = value(f, cells, i, j, k);
  return v;
}

static int exists(const char *path) { return access(path, F_OK) == 0; }

/* No ".tmp" file anywhere in the test directory. */
static void check_no_tmp(void) {
  if (g_rank != 0) return;
  DIR *d = opendir(g_dir);
  CHECK(d, "cannot list %s", g_dir);
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    CHECK(n < 4 || strcmp(e->d_name + n - 4, ".tmp") != 0, "left behind: %s", e->d_name);
  }
  closedir(d);
}

static void check_version_attr(const char *path) {
  if (g_rank != 0) return;
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  CHECK(file >= 0, "cannot open %s", path);
  hid_t a = H5Aopen(file, "tessera_version", H5P_DEFAULT);
  CHECK(a >= 0, "no tessera_version in %s", path);
  hid_t t = H5Aget_type(a);
  char buf[64] = {0};
  CHECK(H5Tget_class(t) == H5T_STRING && H5Tget_size(t) < sizeof buf, "bad version type");
  CHECK(H5Aread(a, t, buf) >= 0, "cannot read version");
  CHECK(strcmp(buf, TSR_VERSION) == 0, "version '%s' != '%s'", buf, TSR_VERSION);
  H5Tclose(t);
  H5Aclose(a);
  H5Fclose(file);
  if (system("command -v h5dump >/dev/null 2>&1") == 0) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "h5dump -H '%s' >/dev/null", path);
    CHECK(system(cmd) == 0, "h5dump -H %s failed", path);
  }
}

static const char *const names[2] = {"u", "v"};

static void write_read(const char *tag, const tsr_grid_meta *meta, int waxis, int raxis,
                       int force_serial) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s_%s.h5", g_dir, tag, force_serial ? "serial" : "mpio");
  tsr_box wb = slab_box(meta->dim, meta->cells, waxis);
  double *w[2] = {fill(0, meta->cells, &wb), fill(1, meta->cells, &wb)};
  tsr_output_opts opts = {.force_serial = force_serial};
  tsr_err err = tsr_output_write_fields(MPI_COMM_WORLD, path, meta, &wb, 2, names,
                                        (const double *const *)w, &opts);
  CHECK(err == TSR_OK, "write %s: %s", path, tsr_err_message());
  char tmp[520];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  CHECK(exists(path) && !exists(tmp), "%s missing or %s left", path, tmp);
  check_no_tmp();
  check_version_attr(path);

  tsr_box rb = slab_box(meta->dim, meta->cells, raxis);
  for (int f = 0; f < 2; ++f) {
    double *want = fill(f, meta->cells, &rb);
    double *got = malloc(sizeof(double) * (size_t)(tsr_box_cells(&rb) + 1));
    tsr_grid_meta m;
    memset(&m, 0xff, sizeof m);
    err = tsr_output_read_field(MPI_COMM_WORLD, path, names[f], &rb, got, &m);
    CHECK(err == TSR_OK, "read %s:%s: %s", path, names[f], tsr_err_message());
    CHECK(memcmp(got, want, sizeof(double) * (size_t)tsr_box_cells(&rb)) == 0,
          "field %s of %s differs", names[f], path);
    CHECK(m.dim == meta->dim && m.time == meta->time && m.step == meta->step, "meta of %s", path);
    for (int d = 0; d < meta->dim; ++d)
      CHECK(m.cells[d] == meta->cells[d] && m.lo[d] == meta->lo[d] && m.hi[d] == meta->hi[d],
            "axis %d of %s", d, path);
    free(want);
    free(got);
  }
  /* a missing field, a box that one rank gets wrong: every rank fails, as an input error */
  err = tsr_output_read_field(MPI_COMM_WORLD, path, "nope", &rb, w[0], NULL);
  CHECK(err == TSR_ERR_INPUT && strstr(tsr_err_message(), "'nope'") &&
            strstr(tsr_err_message(), "u, v"),
        "missing field gave %d", (int)err);
  tsr_box bad = rb;
  if (g_rank == g_size - 1) bad.hi[0] = meta->cells[0] + 1, bad.lo[0] = 0;
  double *big = malloc(sizeof(double) * (size_t)(tsr_box_cells(&bad) + 1));
  err = tsr_output_read_field(MPI_COMM_WORLD, path, "u", &bad, big, NULL);
  CHECK(err == TSR_ERR_INPUT && strstr(tsr_err_message(), "does not fit"),
        "bad box gave %d", (int)err);
  free(big);
  free(w[0]);
  free(w[1]);
}

/* Writing where there is no directory: TSR_ERR_IO on every rank, naming the path, and
 * nothing left on disk. */
static void write_missing_dir(const tsr_grid_meta *meta, int force_serial) {
  char path[512], missing[300];
  snprintf(missing, sizeof missing, "%s/missing", g_dir);
  snprintf(path, sizeof path, "%s/sub/x.h5", missing);
  int cells[3] = {meta->cells[0], meta->cells[1], meta->cells[2]};
  tsr_box b = slab_box(meta->dim, cells, 0);
  double *u = fill(0, cells, &b);
  const double *data[1] = {u};
  tsr_output_opts opts = {.force_serial = force_serial};
  tsr_err err = tsr_output_write_fields(MPI_COMM_WORLD, path, meta, &b, 1, names, data, &opts);
  CHECK(err == TSR_ERR_IO, "gave %d", (int)err);
  CHECK(strstr(tsr_err_message(), path) && strstr(tsr_err_message(), "writable"),
        "message: %s", tsr_err_message());
  CHECK(!exists(missing), "%s appeared", missing);
  check_no_tmp();
  free(u);
}

static char *slurp(const char *path) {
  FILE *fp = fopen(path, "r");
  CHECK(fp, "cannot open %s", path);
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, fp);
  buf[n] = '\0';
  fclose(fp);
  return buf;
}

static void check_xdmf(const char *tag, const tsr_grid_meta *meta, const char *nodes,
                       const char *celldims, const char *topo, const char *geo) {
  if (g_rank != 0) return;
  char xmf[512], h5[64], ref[128];
  snprintf(xmf, sizeof xmf, "%s/%s.xmf", g_dir, tag);
  snprintf(h5, sizeof h5, "%s_mpio.h5", tag);
  CHECK(tsr_output_write_xdmf(xmf, h5, meta, 2, names) == TSR_OK, "%s", tsr_err_message());
  const char *s = slurp(xmf);
  const char *want[] = {topo, geo, nodes, celldims, "Center=\"Cell\"", "Format=\"HDF\"",
                        "Precision=\"8\"", "<Time Value=\"0.25\"/>", "Version=\"3.0\""};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; ++i)
    CHECK(strstr(s, want[i]), "%s lacks %s:\n%s", xmf, want[i], s);
  for (int f = 0; f < 2; ++f) {
    snprintf(ref, sizeof ref, ">%s:/fields/%s</DataItem>", h5, names[f]);
    CHECK(strstr(s, ref), "%s lacks %s:\n%s", xmf, ref, s);
  }
  check_no_tmp();
  char bad[512];
  snprintf(bad, sizeof bad, "%s/missing/%s.xmf", g_dir, tag);
  CHECK(tsr_output_write_xdmf(bad, h5, meta, 2, names) == TSR_ERR_IO &&
            strstr(tsr_err_message(), bad),
        "xdmf into a missing directory: %s", tsr_err_message());
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  check_scratch_dir(g_dir, sizeof g_dir, "out_test_output");

  tsr_grid_meta m2 = {.dim = 2, .cells = {13, 7, 1}, .lo = {0, -1, 0}, .hi = {1.3, 1, 0},
                      .time = 0.25, .step = 42};
  tsr_grid_meta m3 = {.dim = 3, .cells = {5, 6, 7}, .lo = {0, 0, 0}, .hi = {1, 2, 3},
                      .time = 0.25, .step = 7};
  /* 2 x 3 cells cut along x leaves ranks with nothing from 3 ranks on */
  tsr_grid_meta tiny = {.dim = 2, .cells = {2, 3, 1}, .lo = {0, 0, 0}, .hi = {1, 1, 0},
                        .time = -1.5, .step = 0};
  int modes = tsr_output_parallel_available() ? 2 : 1;
  for (int serial = modes == 2 ? 0 : 1; serial < 2; ++serial) {
    write_read("grid2d", &m2, 1, 0, serial);
    write_read("grid3d", &m3, 2, 0, serial);
    write_read("grid3d_b", &m3, 0, 1, serial);
    write_read("tiny", &tiny, 0, 1, serial);
    write_missing_dir(&m3, serial);
  }
  /* writing over an existing file replaces it */
  m2.time = 0.5;
  write_read("grid2d", &m2, 0, 1, 1);
  m2.time = 0.25;

  tsr_err err = tsr_output_read_field(MPI_COMM_WORLD, "no/such/file.h5", "u", &(tsr_box){{0, 0, 0}, {0, 0, 0}},
                                      NULL, NULL);
  CHECK(err == TSR_ERR_IO && strstr(tsr_err_message(), "no/such/file.h5"), "gave %d", (int)err);

  check_xdmf("grid3d", &m3, "Dimensions=\"8 7 6\"", "Dimensions=\"7 6 5\"",
             "TopologyType=\"3DCoRectMesh\"", "GeometryType=\"ORIGIN_DXDYDZ\"");
  /* a 2D grid is one layer of cells across z, so ParaView shows it in the x-y plane */
  check_xdmf("grid2d", &m2, "Dimensions=\"2 8 14\"", "Dimensions=\"1 7 13\"",
             "TopologyType=\"3DCoRectMesh\"", "GeometryType=\"ORIGIN_DXDYDZ\"");

  check_scratch_remove(g_dir);
  if (g_rank == 0) printf("test_output: all checks passed on %d ranks\n", g_size);
  MPI_Finalize();
  return 0;
}
