/* Checkpoint datasets written rank by rank (io/output_chunks.c) on 1 to 4 ranks: chunks that
 * lie inside a rank's box are built and checksummed by tessera (direct), chunks that straddle
 * boxes go through HDF5's filter (shared); both kinds in one file, float64 and float32, one
 * thread and several; from contiguous doubles and, as checkpoints are written, straight from
 * ghosted arrays of doubles or floats (tsr_output_layout, two fields), also through parallel
 * HDF5. Checks: the file reads back equal on another decomposition (H5Dread
 * verifies every checksum); every raw chunk (values and stored checksum, H5Dread_chunk) is
 * byte for byte what HDF5's own Fletcher32 filter writes for the same values; one flipped byte
 * in a direct chunk and in a shared one is caught. Exits non-zero (MPI_Abort) on a failure. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <fcntl.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/output.h"

static int g_rank, g_size;
static char g_dir[256];

#define TSR_CHECK_SCRATCH
#include "tests/check.h"

/* The cells of piece g_rank of the grid cut along axis into g_size pieces of uneven lengths
 * (so that cuts fall inside chunks). */
static tsr_box piece(int dim, const int cells[3], int axis, int rank) {
  tsr_box b = tsr_box_make(dim, cells);
  int n = cells[axis];
  b.lo[axis] = (int)((long)n * rank / g_size) + (rank > 0);
  b.hi[axis] = rank + 1 == g_size ? n : (int)((long)n * (rank + 1) / g_size) + 1;
  return b;
}

static double value(const int cells[3], int i, int j, int k) {
  long gid = i + (long)cells[0] * (j + (long)cells[1] * k);
  return (double)gid / 7.0 - 3.25;
}

/* Values of box b, x fastest; rounded to float when single. */
static double *fill(const int cells[3], const tsr_box *b, int single) {
  double *v = malloc(sizeof(double) * (size_t)(tsr_box_cells(b) + 1));
  CHECK(v, "out of memory");
  long n = 0;
  for (int k = b->lo[2]; k < b->hi[2]; ++k)
    for (int j = b->lo[1]; j < b->hi[1]; ++j)
      for (int i = b->lo[0]; i < b->hi[0]; ++i) {
        double x = value(cells, i, j, k);
        v[n++] = single ? (double)(float)x : x;
      }
  return v;
}

/* How a case hands its values to the writer: contiguous doubles of the owned box (ghost 0), or
 * the owned box inside a ghosted array of ghost cells on every side (2D: none along z), of
 * doubles or floats, with two fields (u, and v = 2u + 1) one after the other as a staged state
 * holds its components: tsr_output_layout. */
typedef struct {
  int ghost, floats;
} source;

static double value_v(double u) { return 2 * u + 1; }

/* The ghosted array of box b for s (caller frees *mem) and its layout; ghost cells hold a value
 * that no cell has, so that a ghost read in place of a cell shows. */
static tsr_output_layout make_layout(const int cells[3], int dim, const tsr_box *b,
                                     const source *s, void **mem, const void *base[2]) {
  int g = s->ghost, n[3], lo[3];
  for (int a = 0; a < 3; ++a) {
    int ga = a < dim ? g : 0;
    n[a] = tsr_box_len(b, a) + 2 * ga;
    lo[a] = b->lo[a] - ga;
  }
  size_t vs = s->floats ? sizeof(float) : sizeof(double), per = (size_t)n[0] * n[1] * n[2];
  unsigned char *p = malloc(2 * per * vs + 1);
  CHECK(p, "out of memory");
  for (size_t c = 0; c < 2 * per; ++c) {
    if (s->floats) ((float *)p)[c] = -7777.0f;
    else ((double *)p)[c] = -7777.0;
  }
  for (int q = 0; q < 2; ++q)
    for (int k = b->lo[2]; k < b->hi[2]; ++k)
      for (int j = b->lo[1]; j < b->hi[1]; ++j)
        for (int i = b->lo[0]; i < b->hi[0]; ++i) {
          size_t o = q * per + ((size_t)(k - lo[2]) * n[1] + (size_t)(j - lo[1])) * n[0] +
                     (size_t)(i - lo[0]);
          double u = value(cells, i, j, k), x = q ? value_v(u) : u;
          if (s->floats) ((float *)p)[o] = (float)x;
          else ((double *)p)[o] = x;
        }
  size_t first = ((size_t)(b->lo[2] - lo[2]) * n[1] + (size_t)(b->lo[1] - lo[1])) * n[0] +
                 (size_t)(b->lo[0] - lo[0]);
  for (int q = 0; q < 2; ++q) base[q] = p + (q * per + first) * vs;
  *mem = p;
  return (tsr_output_layout){base, s->floats, n[0], (ptrdiff_t)n[0] * n[1]};
}

/* The reference: the same dataset written by HDF5 alone (its Fletcher32 filter), one H5Dwrite
 * of all values (rounded to float first when the source holds floats), on rank 0. */
#if H5_VERSION_GE(1, 10, 5)
static void write_reference(const char *ours, const char *ref, const tsr_grid_meta *m,
                            int rounded) {
  tsr_box all = tsr_box_make(m->dim, m->cells);
  double *v = fill(m->cells, &all, rounded);
  hid_t f = H5Fopen(ours, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, "/fields/u", H5P_DEFAULT);
  hid_t dcpl = H5Dget_create_plist(d), type = H5Dget_type(d), space = H5Dget_space(d);
  CHECK(f >= 0 && d >= 0 && dcpl >= 0 && type >= 0 && space >= 0, "cannot open %s", ours);
  hid_t rf = H5Fcreate(ref, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t rd = H5Dcreate2(rf, "u", type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  CHECK(rd >= 0 && H5Dwrite(rd, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0,
        "cannot write the reference %s", ref);
  H5Dclose(rd);
  H5Fclose(rf);
  H5Sclose(space);
  H5Tclose(type);
  H5Pclose(dcpl);
  H5Dclose(d);
  H5Fclose(f);
  free(v);
}

/* 1 when the chunk at offset (slowest first) lies, clipped to the grid, inside rank r's box. */
static int chunk_inside(const tsr_grid_meta *m, const hsize_t *off, const hsize_t *cdim,
                        const tsr_box *b) {
  for (int i = 0; i < m->dim; ++i) {
    int a = m->dim - 1 - i;
    hsize_t lo = off[i], hi = off[i] + cdim[i];
    if (hi > (hsize_t)m->cells[a]) hi = (hsize_t)m->cells[a];
    if (lo < (hsize_t)b->lo[a] || hi > (hsize_t)b->hi[a]) return 0;
  }
  return 1;
}

/* Rank 0: every raw chunk of ours equals the reference's; returns the file address of the
 * last chunk that one rank holds whole (written directly, *direct) and of the last one that
 * no rank holds whole (*shared), or -1. */
static void compare_chunks(const char *ours, const char *ref, const tsr_grid_meta *m,
                           const tsr_box *boxes, long long *direct, long long *shared) {
  hid_t f = H5Fopen(ours, H5F_ACC_RDONLY, H5P_DEFAULT), g = H5Fopen(ref, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, "/fields/u", H5P_DEFAULT), rd = H5Dopen2(g, "u", H5P_DEFAULT);
  hid_t dcpl = H5Dget_create_plist(d), sp = H5Dget_space(d), rsp = H5Dget_space(rd);
  hsize_t cdim[3], n = 0, rn = 0;
  CHECK(H5Pget_chunk(dcpl, m->dim, cdim) == m->dim, "not chunked");
  CHECK(H5Dget_num_chunks(d, sp, &n) >= 0 && H5Dget_num_chunks(rd, rsp, &rn) >= 0 &&
            n == rn && n > 1,
        "%s has %llu chunks, the reference %llu", ours, (unsigned long long)n,
        (unsigned long long)rn);
  *direct = *shared = -1;
  for (hsize_t c = 0; c < n; ++c) {
    hsize_t off[3];
    unsigned mask, rmask;
    haddr_t addr;
    hsize_t size, rsize;
    CHECK(H5Dget_chunk_info(d, sp, c, off, &mask, &addr, &size) >= 0, "chunk info");
    CHECK(H5Dget_chunk_info_by_coord(rd, off, &rmask, &(haddr_t){0}, &rsize) >= 0 &&
              size == rsize && mask == 0 && rmask == 0,
          "chunk %llu: %llu bytes, mask %u; the reference's %llu, mask %u", (unsigned long long)c,
          (unsigned long long)size, mask, (unsigned long long)rsize, rmask);
    unsigned char *a = malloc(size), *b = malloc(size);
    uint32_t fa = 1, fb = 1;
    CHECK(H5Dread_chunk(d, H5P_DEFAULT, off, &fa, a) >= 0 &&
              H5Dread_chunk(rd, H5P_DEFAULT, off, &fb, b) >= 0,
          "read chunk %llu", (unsigned long long)c);
    CHECK(memcmp(a, b, size) == 0, "chunk %llu at (%llu %llu %llu) differs from HDF5's own",
          (unsigned long long)c, (unsigned long long)off[0], (unsigned long long)off[1],
          (unsigned long long)(m->dim > 2 ? off[2] : 0));
    free(a);
    free(b);
    int whole = 0;
    for (int r = 0; r < g_size; ++r) whole |= chunk_inside(m, off, cdim, &boxes[r]);
    if (whole) *direct = (long long)addr;
    if (!whole) *shared = (long long)addr;
  }
  H5Sclose(sp);
  H5Sclose(rsp);
  H5Pclose(dcpl);
  H5Dclose(d);
  H5Dclose(rd);
  H5Fclose(f);
  H5Fclose(g);
}

#endif

/* Flips one byte at addr + 100 of path; again to restore. */
static void flip(const char *path, long long addr) {
  int fd = open(path, O_RDWR);
  unsigned char c;
  CHECK(fd >= 0 && pread(fd, &c, 1, addr + 100) == 1, "open %s", path);
  c ^= 0x10;
  CHECK(pwrite(fd, &c, 1, addr + 100) == 1, "write %s", path);
  close(fd);
}

/* The read of the damaged file fails on every rank, naming the checksum. */
static void check_damage_caught(const char *path, const tsr_grid_meta *m, const char *what) {
  tsr_box b = piece(m->dim, m->cells, 0, g_rank);
  double *got = malloc(sizeof(double) * (size_t)(tsr_box_cells(&b) + 1));
  tsr_err err = tsr_output_read_field(MPI_COMM_WORLD, path, "u", &b, got, NULL);
  CHECK(err != TSR_OK && strstr(tsr_err_message(), "Fletcher32"),
        "a flipped byte in a %s chunk was not caught (%d)", what, (int)err);
  free(got);
}

/* Writes a dataset (ranks in turn, unless parallel), checks it and damages it. */
static void write_check_src(const char *tag, tsr_grid_meta m, size_t chunk_bytes, int axis,
                            int single, int threads, source src, int parallel) {
  char path[512], ref[512];
  snprintf(path, sizeof path, "%s/%s.h5", g_dir, tag);
  snprintf(ref, sizeof ref, "%s/%s_ref.h5", g_dir, tag);
  m.single = single;
  tsr_box boxes[4];
  for (int r = 0; r < g_size; ++r) boxes[r] = piece(m.dim, m.cells, axis, r);
  double *w = fill(m.cells, &boxes[g_rank], 0);
  int ghosted = src.ghost > 0, nfield = ghosted ? 2 : 1, rounded = single || src.floats;
  const char *names[] = {"u", "v"};
  const double *data[] = {w};
  void *mem = NULL;
  const void *base[2];
  tsr_output_layout lay;
  if (ghosted) lay = make_layout(m.cells, m.dim, &boxes[g_rank], &src, &mem, base);
  tsr_output_opts o = {.force_serial = !parallel, .checksum = 1, .threads = threads,
                       .chunk_bytes = chunk_bytes, .layout = ghosted ? &lay : NULL};
  long long d0, s0, d1, s1;
  tsr_output_chunk_counts(&d0, &s0);
  tsr_err err = tsr_output_write_fields(MPI_COMM_WORLD, path, &m, &boxes[g_rank], nfield, names,
                                        ghosted ? NULL : data, &o);
  CHECK(err == TSR_OK, "write %s: %s", path, tsr_err_message());
  tsr_output_chunk_counts(&d1, &s1);
  long long n[2] = {d1 - d0, s1 - s0};
  MPI_Allreduce(MPI_IN_PLACE, n, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  /* in parallel HDF5 writes the chunks itself where it can (else the ranks write in turn) */
  CHECK((parallel && tsr_output_parallel_available()) ||
            (n[0] > 0 && (g_size == 1 ? n[1] == 0 : n[1] > 0)),
        "%s: %lld chunks written directly, %lld shared", tag, n[0], n[1]);

  /* read back on another cut: H5Dread checks every chunk's checksum */
  tsr_box rb = piece(m.dim, m.cells, axis == 0 ? m.dim - 1 : 0, g_size - 1 - g_rank);
  double *want = fill(m.cells, &rb, rounded),
         *got = malloc(sizeof(double) * (size_t)(tsr_box_cells(&rb) + 1));
  err = tsr_output_read_field(MPI_COMM_WORLD, path, "u", &rb, got, NULL);
  CHECK(err == TSR_OK, "read %s: %s", path, tsr_err_message());
  CHECK(memcmp(got, want, sizeof(double) * (size_t)tsr_box_cells(&rb)) == 0, "%s reads back different", tag);
  if (ghosted) {
    err = tsr_output_read_field(MPI_COMM_WORLD, path, "v", &rb, got, NULL);
    CHECK(err == TSR_OK, "read %s: %s", path, tsr_err_message());
    long c = 0;
    for (int k = rb.lo[2]; k < rb.hi[2]; ++k)
      for (int j = rb.lo[1]; j < rb.hi[1]; ++j)
        for (int i = rb.lo[0]; i < rb.hi[0]; ++i, ++c) {
          double x = value_v(value(m.cells, i, j, k));
          if (rounded) x = (double)(float)x;
          CHECK(got[c] == x, "%s: v at (%d %d %d) reads %g, not %g", tag, i, j, k, got[c], x);
        }
  }
  free(want);
  free(got);

  long long at[2] = {-1, -1};
#if H5_VERSION_GE(1, 10, 5) /* H5Dget_chunk_info */
  if (g_rank == 0) {
    write_reference(path, ref, &m, rounded);
    compare_chunks(path, ref, &m, boxes, &at[0], &at[1]);
    CHECK(at[0] >= 0 && (g_size == 1 || at[1] >= 0), "%s: no direct or shared chunk found", tag);
  }
#else
  if (g_rank == 0)
    printf("test_output_chunks: NOT CHECKED with this HDF5 (< 1.10.5, no H5Dget_chunk_info): "
           "raw chunks against HDF5's filter, damaged chunks\n");
#endif
  MPI_Bcast(at, 2, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  for (int k = 0; k < 2; ++k) {
    if (at[k] < 0) continue;
    if (g_rank == 0) flip(path, at[k]);
    MPI_Barrier(MPI_COMM_WORLD);
    check_damage_caught(path, &m, k == 0 ? "direct" : "shared");
    if (g_rank == 0) flip(path, at[k]);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  free(w);
  free(mem);
}

static void write_check(const char *tag, tsr_grid_meta m, size_t chunk_bytes, int axis,
                        int single, int threads) {
  write_check_src(tag, m, chunk_bytes, axis, single, threads, (source){0, 0}, 0);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  check_scratch_dir(g_dir, sizeof g_dir, "out_test_output_chunks");
  /* small chunks (checkpoints have up to 4 MiB) on small grids: chunks of 8x9x5 and 12x10
   * cells, some at the edge of the grid (partly outside it); on 1 to 4 ranks every cut leaves
   * some chunks inside one rank's piece and cuts others */
  tsr_grid_meta g3 = {.dim = 3, .cells = {40, 33, 29}, .hi = {1, 1, 1}, .step = 3};
  tsr_grid_meta g2 = {.dim = 2, .cells = {37, 45, 1}, .hi = {1, 1, 0}, .step = 5};
  write_check("g3x_f64_t1", g3, 4096, 0, 0, 1);
  write_check("g3y_f32_t3", g3, 4096, 1, 1, 3);
  write_check("g3x_f64_t3", g3, 4096, 0, 0, 3);
  write_check("g2x_f64_t2", g2, 1024, 0, 0, 2);
  write_check("g2x_f32_t1", g2, 1024, 0, 1, 1);
  /* straight from ghosted arrays, as a staged state holds them (ghost 1 and 2, doubles and
   * floats into files of their precision and, floats, widened into float64) */
  write_check_src("s3x_f64_g1_t2", g3, 4096, 0, 0, 2, (source){1, 0}, 0);
  write_check_src("s3y_f32_g2_t1", g3, 4096, 1, 1, 1, (source){2, 1}, 0);
  write_check_src("s3z_f64w_g2_t3", g3, 4096, 2, 0, 3, (source){2, 1}, 0);
  write_check_src("s2x_f32_g1_t2", g2, 1024, 0, 1, 2, (source){1, 1}, 0);
  write_check_src("s2y_f64_g2_t1", g2, 1024, 1, 0, 1, (source){2, 0}, 0);
  /* and where HDF5 writes in parallel (MPI-IO) or HDF5 writes the whole slab */
  write_check_src("p3x_f64_g2", g3, 4096, 0, 0, 2, (source){2, 0}, 1);
  write_check_src("p2y_f32_g1", g2, 1024, 1, 1, 2, (source){1, 1}, 1);
  check_scratch_remove(g_dir);
  if (g_rank == 0) printf("test_output_chunks: all checks passed on %d ranks\n", g_size);
  MPI_Finalize();
  return 0;
}
