/* Checksummed datasets written chunk by chunk: chunks gathered and checksummed by threads,
 * stored with H5Dwrite_chunk (io/output_chunks.h).
 *
 * Why: through H5Dwrite, HDF5 handles every chunk of a filtered dataset in the calling thread:
 * it gathers the chunk from the memory buffer into a fresh allocation, runs the Fletcher32
 * filter (which checksums it and copies it once more, 4 bytes longer) and writes it. That ran
 * at about 1 GB/s on the GPU machines, a third of what a checkpoint needs to be written before
 * the next one. Here threads do the gathering and checksumming, once, into buffers reused from
 * one checkpoint to the next, while the calling thread only writes. */
#define _POSIX_C_SOURCE 200809L

#include "io/output_chunks.h"

#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* HDF5's own Fletcher32 (H5checksum.c), the function its filter (H5Zfletcher32.c) applies to a
 * chunk's bytes on write and checks on read. Every build of the library exports it (serial and
 * parallel, 1.8 to 1.14; `nm -D libhdf5.so | grep fletcher`) but only a private header
 * (H5private.h) declares it, hence this declaration. It reads a byte at a time (about 2 GB/s
 * on one core, the largest item of a checkpoint's profile on CPU ranks), so chunks are summed
 * by fletcher32 below, which computes the same sums by SIMD; the library's function is the
 * reference: fletcher32 is used only once it agrees with it (checked at first use), and
 * tests/mpi/test_output_chunks.c checks that the raw chunks written here (data and checksum,
 * read with H5Dread_chunk) are the bytes HDF5's filter writes, and that H5Dread, which
 * verifies the checksum, reads them back. */
uint32_t H5_checksum_fletcher32(const void *data, size_t len);

typedef uint32_t v4u32 __attribute__((vector_size(16)));

/* H5_checksum_fletcher32's result, computed another way. It sums big-endian 16-bit words in
 * blocks of 360, folding both sums to 17 bits after each: in a block of n words w_i, sum1 +=
 * sum(w_i) and sum2 += n * sum1 + sum((n - i) w_i), all modulo 2^32 as there, so any order
 * of the additions gives its bits. Whole blocks go 8 words at a time in 4 lanes of even and
 * 4 of odd words, with running sums A and B = sum(A) per lane: for word i = 8g + p (p: the
 * word's place in its 16 bytes) the weight n - i is 8 (45 - g) - p. Assumes little-endian
 * loads; checked against the library before use. */
static uint32_t fletcher32(const void *data, size_t bytes) {
  const unsigned char *d = data;
  size_t len = bytes / 2;
  uint32_t sum1 = 0, sum2 = 0;
  while (len) {
    uint32_t n = len > 360 ? 360 : (uint32_t)len, a = 0, b = 0, i = 0;
    if (n == 360) {
      v4u32 ae = {0, 0, 0, 0}, be = ae, ao = ae, bo = ae;
      for (int g = 0; g < 45; ++g) {
        v4u32 x;
        memcpy(&x, d + 16 * g, 16);
        v4u32 e = ((x & 0xff) << 8) | ((x >> 8) & 0xff), o = ((x >> 8) & 0xff00) | (x >> 24);
        ae += e, be += ae, ao += o, bo += ao;
      }
      for (int l = 0; l < 4; ++l) {
        a += ae[l] + ao[l];
        b += 8 * (be[l] + bo[l]) - (uint32_t)(2 * l) * ae[l] - (uint32_t)(2 * l + 1) * ao[l];
      }
      i = n;
    }
    for (; i < n; ++i) {
      uint32_t w = (uint32_t)d[2 * i] << 8 | d[2 * i + 1];
      a += w;
      b += (n - i) * w;
    }
    sum2 += n * sum1 + b;
    sum1 += a;
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    d += 2 * (size_t)n;
    len -= n;
  }
  if (bytes % 2) {
    sum1 += (uint32_t)*d << 8;
    sum2 += sum1;
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  sum1 = (sum1 & 0xffff) + (sum1 >> 16);
  sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  return sum2 << 16 | sum1;
}

static int fast_sum; /* 1: fletcher32 agrees with the library (set once, by agree_once) */
static pthread_once_t fast_once = PTHREAD_ONCE_INIT;

/* fletcher32 against H5_checksum_fletcher32 on pseudo-random bytes and on all-ones bytes (the
 * largest sums), at lengths around the block size and odd ones. */
static void agree_once(void) {
  enum { N = 4099 };
  static unsigned char buf[N];
  uint32_t r = 12345;
  for (int i = 0; i < N; ++i) buf[i] = (unsigned char)((r = r * 1103515245u + 12345u) >> 24);
  static const size_t lens[] = {0, 1, 2, 3, 17, 718, 719, 720, 721, 722, 1440, 2881, 4098, N};
  int ok = 1;
  for (size_t k = 0; k < sizeof lens / sizeof *lens; ++k)
    ok &= fletcher32(buf, lens[k]) == H5_checksum_fletcher32(buf, lens[k]);
  memset(buf, 0xff, N);
  ok &= fletcher32(buf, N) == H5_checksum_fletcher32(buf, N);
  ok &= fletcher32(buf, 720 * 5) == H5_checksum_fletcher32(buf, 720 * 5);
  fast_sum = ok;
}

static uint32_t checksum(const void *data, size_t len) {
  pthread_once(&fast_once, agree_once);
  return fast_sum ? fletcher32(data, len) : H5_checksum_fletcher32(data, len);
}

#define FLETCHER_LEN 4

/* A box of the dataset in z y x order (2D datasets: z of length 1), hi exclusive. */
typedef struct {
  hsize_t lo[3], hi[3];
} region;

typedef struct {
  tsr_output_src src;    /* where the slab's values lie */
  hsize_t start[3], count[3]; /* the slab (z y x) */
  hsize_t cdim[3];       /* chunk shape (z y x) */
  size_t esize;          /* bytes per value in the file: 8 or 4 */
  size_t cbytes;         /* bytes of a chunk's values */
} gather_job;

/* Chunk c's values, converted to the file's type, then HDF5's checksum of them encoded as its
 * filter does (UINT32ENCODE: least significant byte first), into out (cbytes + 4 bytes).
 * Values beyond the dataset's extent (edge chunks) are the fill value, 0, as HDF5 writes them.
 * The rows are read where the source holds them (a staged state with its ghosts), so the
 * values are touched once between the staging copy and the file. */
static void gather(const gather_job *j, const region *c, unsigned char *out) {
  hsize_t nx = c->hi[2] - c->lo[2];
  const tsr_output_src *s = &j->src;
  size_t vsize = s->single ? sizeof(float) : sizeof(double);
  for (hsize_t z = 0; z < j->cdim[0]; ++z)
    for (hsize_t y = 0; y < j->cdim[1]; ++y) {
      unsigned char *row = out + ((z * j->cdim[1] + y) * j->cdim[2]) * j->esize;
      hsize_t gz = c->lo[0] + z, gy = c->lo[1] + y, n = nx;
      if (gz >= c->hi[0] || gy >= c->hi[1]) n = 0;
      if (n) {
        hsize_t at = (gz - j->start[0]) * s->sz + (gy - j->start[1]) * s->sy +
                     (c->lo[2] - j->start[2]);
        const void *src = (const unsigned char *)s->base + at * vsize;
        if (j->esize == vsize) {
          memcpy(row, src, n * vsize);
        } else if (j->esize == 4) {
          const double *d = src;
          float *f = (float *)row;
          for (hsize_t i = 0; i < n; ++i) f[i] = (float)d[i];
        } else {
          const float *f = src;
          double *d = (double *)row;
          for (hsize_t i = 0; i < n; ++i) d[i] = (double)f[i];
        }
      }
      memset(row + n * j->esize, 0, (j->cdim[2] - n) * j->esize);
    }
  uint32_t sum = checksum(out, j->cbytes);
  unsigned char *p = out + j->cbytes;
  for (int b = 0; b < FLETCHER_LEN; ++b) p[b] = (unsigned char)(sum >> (8 * b));
}

/* Buffers for prepared chunks (2 per preparing thread), kept from one call to the next (under
 * tsr_io_lock) so that a checkpoint does not fault in fresh pages for them, as HDF5's own path
 * does for every chunk. Held until the process ends. */
static unsigned char *pool;
static size_t pool_bytes;

static long long n_direct, n_shared; /* chunks written each way, for tests */

void tsr_output_chunk_counts(long long *direct, long long *shared) {
  *direct = n_direct;
  *shared = n_shared;
}

static unsigned char *pool_get(size_t bytes) {
  if (bytes <= pool_bytes) return pool;
  free(pool);
  pool = malloc(bytes);
  pool_bytes = pool ? bytes : 0;
  return pool;
}

/* 1 when d is a chunked dataset of little-endian floats with Fletcher32 as its only filter,
 * on a machine whose doubles and floats are those types (the chunks are built from memory
 * as they are); chunk shape into cdim (z y x), bytes per value into *esize. */
static int direct_ok(hid_t d, int rank, hsize_t cdim[3], size_t *esize) {
  int ok = 0;
  hid_t dcpl = H5Dget_create_plist(d), type = H5Dget_type(d);
  hsize_t c[3] = {1, 1, 1};
  if (dcpl >= 0 && type >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED &&
      H5Pget_chunk(dcpl, rank, c) == rank && H5Pget_nfilters(dcpl) == 1) {
    unsigned flags, cfg;
    size_t nv = 0;
    char name[64];
    ok = H5Pget_filter2(dcpl, 0, &flags, &nv, NULL, sizeof name, name, &cfg) ==
         H5Z_FILTER_FLETCHER32;
  }
  if (ok && H5Tequal(type, H5T_IEEE_F64LE) > 0 && H5Tequal(H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE) > 0)
    *esize = 8;
  else if (ok && H5Tequal(type, H5T_IEEE_F32LE) > 0 &&
           H5Tequal(H5T_NATIVE_FLOAT, H5T_IEEE_F32LE) > 0)
    *esize = 4;
  else
    ok = 0;
  for (int i = 0; i < 3; ++i) cdim[i] = i < 3 - rank ? 1 : c[i - (3 - rank)];
  if (dcpl >= 0) H5Pclose(dcpl);
  if (type >= 0) H5Tclose(type);
  return ok;
}

/* The slab's chunks (clipped to the extent gdim): those wholly inside it into direct, the parts
 * inside it of those it shares with other slabs into shared, in the file's chunk order. */
static void split_chunks(const gather_job *j, const hsize_t gdim[3], region *direct, size_t *nd,
                         region *shared, size_t *ns) {
  hsize_t first[3], last[3], k[3];
  *nd = *ns = 0;
  for (int a = 0; a < 3; ++a) {
    first[a] = j->start[a] / j->cdim[a];
    last[a] = (j->start[a] + j->count[a] - 1) / j->cdim[a];
  }
  for (k[0] = first[0]; k[0] <= last[0]; ++k[0])
    for (k[1] = first[1]; k[1] <= last[1]; ++k[1])
      for (k[2] = first[2]; k[2] <= last[2]; ++k[2]) {
        region c, in;
        int inside = 1;
        for (int a = 0; a < 3; ++a) {
          c.lo[a] = k[a] * j->cdim[a];
          c.hi[a] = c.lo[a] + j->cdim[a] < gdim[a] ? c.lo[a] + j->cdim[a] : gdim[a];
          hsize_t end = j->start[a] + j->count[a];
          in.lo[a] = c.lo[a] > j->start[a] ? c.lo[a] : j->start[a];
          in.hi[a] = c.hi[a] < end ? c.hi[a] : end;
          if (c.lo[a] < j->start[a] || c.hi[a] > end) inside = 0;
        }
        if (inside) direct[(*nd)++] = c;
        else shared[(*ns)++] = in;
      }
}

/* The memory dataspace of src holding slab s: the array from src->base on, z y x (y x in 2D),
 * as long along z (y) as the slab, along the others as its strides say; nothing selected. */
static hid_t src_space(const tsr_output_slab *s, const tsr_output_src *src) {
  hsize_t dims[3] = {s->count[0], src->sy, 0};
  if (s->rank == 3) dims[1] = src->sz / src->sy, dims[2] = src->sy;
  hid_t sp = H5Screate_simple(s->rank, dims, NULL);
  if (sp >= 0 && H5Sselect_none(sp) < 0) {
    H5Sclose(sp);
    sp = -1;
  }
  return sp;
}

tsr_output_src tsr_output_src_of(const tsr_output_slab *s, const double *data,
                                 const tsr_output_layout *layout, int f) {
  hsize_t nx = s->count[s->rank - 1];
  tsr_output_src src = {data, 0, nx, nx * s->count[s->rank - 2]};
  if (layout)
    src = (tsr_output_src){layout->base[f], layout->single, (hsize_t)layout->sy,
                           (hsize_t)layout->sz};
  if (s->rank == 2) src.sz = src.sy * s->count[0]; /* one plane */
  return src;
}

tsr_err tsr_output_src_write(hid_t d, hid_t dxpl, const tsr_output_slab *s,
                             const tsr_output_src *src, const char *path) {
  hsize_t zero[3] = {0, 0, 0}, one = 1;
  double dummy = 0; /* a valid address for ranks that select nothing */
  hid_t fspace = H5Dget_space(d),
        mspace = s->empty ? H5Screate_simple(1, &one, NULL) : src_space(s, src);
  tsr_err err = TSR_OK;
  if (fspace < 0 || mspace < 0) err = tsr_output_h5_fail(__LINE__, "get a dataspace", path);
  herr_t st = 0;
  if (!err && s->empty) st = H5Sselect_none(fspace) < 0 || H5Sselect_none(mspace) < 0 ? -1 : 0;
  else if (!err)
    st = H5Sselect_hyperslab(fspace, H5S_SELECT_SET, s->start, NULL, s->count, NULL) < 0 ||
                 H5Sselect_hyperslab(mspace, H5S_SELECT_SET, zero, NULL, s->count, NULL) < 0
             ? -1
             : 0;
  if (!err && st < 0) err = tsr_output_h5_fail(__LINE__, "select a hyperslab", path);
  hid_t mtype = src->single ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE;
  if (!err && H5Dwrite(d, mtype, mspace, fspace, dxpl, s->empty ? &dummy : src->base) < 0)
    err = tsr_output_h5_fail(__LINE__, "write field", path);
  if (fspace >= 0) H5Sclose(fspace);
  if (mspace >= 0) H5Sclose(mspace);
  return err;
}

/* The shared parts, through H5Dwrite with one selection: the same regions in the file and,
 * shifted by the slab's start, in the source's array, so the two selections run through the
 * same cells in the same order. */
static tsr_err write_shared(hid_t d, hid_t dxpl, const tsr_output_slab *s, const gather_job *j,
                            const region *shared, size_t ns, const char *path) {
  int r = s->rank, off = 3 - r;
  hid_t fspace = H5Dget_space(d), mspace = src_space(s, &j->src);
  tsr_err err = TSR_OK;
  if (fspace < 0 || mspace < 0) err = tsr_output_h5_fail(__LINE__, "get a dataspace", path);
  for (size_t i = 0; i < ns && !err; ++i) {
    hsize_t fs[3], ms[3], n[3];
    for (int a = 0; a < r; ++a) {
      fs[a] = shared[i].lo[a + off];
      ms[a] = fs[a] - j->start[a + off];
      n[a] = shared[i].hi[a + off] - shared[i].lo[a + off];
    }
    H5S_seloper_t op = i == 0 ? H5S_SELECT_SET : H5S_SELECT_OR;
    if (H5Sselect_hyperslab(fspace, op, fs, NULL, n, NULL) < 0 ||
        H5Sselect_hyperslab(mspace, op, ms, NULL, n, NULL) < 0)
      err = tsr_output_h5_fail(__LINE__, "select the chunks shared with other ranks", path);
  }
  hid_t mtype = j->src.single ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE;
  if (!err && H5Dwrite(d, mtype, mspace, fspace, dxpl, j->src.base) < 0)
    err = tsr_output_h5_fail(__LINE__, "write field", path);
  if (fspace >= 0) H5Sclose(fspace);
  if (mspace >= 0) H5Sclose(mspace);
  return err;
}

/* Stores prepared chunk i of direct from the slot at p. */
static tsr_err put_chunk(hid_t d, hid_t dxpl, int rank, const region *c, size_t bytes,
                         const unsigned char *p, const char *path) {
  hsize_t o[3];
  for (int a = 0; a < rank; ++a) o[a] = c->lo[a + 3 - rank];
#if H5_VERSION_GE(1, 10, 2)
  if (H5Dwrite_chunk(d, dxpl, 0, o, bytes, p) >= 0) return TSR_OK;
#endif
  return tsr_output_h5_fail(__LINE__, "write a chunk", path);
}

/* The hand-over between the threads that prepare chunks and the one that stores them: chunk
 * i goes through slot i % nslot. Waits sleep on the condition variable: the machine's cores
 * may be busy stepping, and a spinning wait would take them. */
typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  size_t next;    /* the next chunk to claim for preparing */
  size_t written; /* chunks stored so far, in order */
  char *ready;    /* per slot: it holds its prepared chunk */
  int failed;
} handover;

/* The direct chunks: the calling thread stores them in the file's order while the other
 * threads (all of them where there is only one) each claim the next chunk, wait for its slot
 * to be free (the chunk nslot before it stored) and prepare it there. */
static tsr_err write_direct(hid_t d, hid_t dxpl, int rank, const gather_job *j,
                            const region *direct, size_t nd, int threads, const char *path) {
  if (!nd) return TSR_OK;
  int t = threads < 1 ? 1 : threads;
  if ((size_t)t > nd + 1) t = (int)nd + 1;
  /* a chunk's bytes (values and checksum) and the distance between slots: whole cache lines,
   * so that every slot's values are aligned for their type */
  size_t slot = j->cbytes + FLETCHER_LEN, nslot = t > 1 ? 2 * (size_t)(t - 1) : 1;
  size_t stride = (slot + 63) / 64 * 64;
  unsigned char *buf = pool_get(stride * nslot);
  TSR_CHECK(buf, TSR_ERR_MEMORY, "out of memory for %zu bytes of chunks writing '%s'",
            stride * nslot, path);
  tsr_err err = TSR_OK;
  if (t == 1) {
    for (size_t i = 0; i < nd && !err; ++i) {
      gather(j, &direct[i], buf);
      err = put_chunk(d, dxpl, rank, &direct[i], slot, buf, path);
    }
    return err;
  }
  char ready[2 * 256];
  handover h = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, ready, 0};
  if (nslot > sizeof ready) nslot = sizeof ready;
  memset(ready, 0, sizeof ready);
#pragma omp parallel num_threads(t)
  {
    if (omp_get_thread_num() == 0) {
      for (size_t i = 0; i < nd; ++i) {
        pthread_mutex_lock(&h.mu);
        while (!h.ready[i % nslot]) pthread_cond_wait(&h.cv, &h.mu);
        pthread_mutex_unlock(&h.mu);
        tsr_err e = put_chunk(d, dxpl, rank, &direct[i], slot, buf + (i % nslot) * stride, path);
        pthread_mutex_lock(&h.mu);
        h.ready[i % nslot] = 0;
        h.written = i + 1;
        if (e) err = e, h.failed = 1;
        pthread_cond_broadcast(&h.cv);
        pthread_mutex_unlock(&h.mu);
        if (e) break;
      }
    } else {
      for (;;) {
        pthread_mutex_lock(&h.mu);
        size_t i = h.next++;
        while (!h.failed && i < nd && i >= h.written + nslot) pthread_cond_wait(&h.cv, &h.mu);
        int stop = h.failed || i >= nd;
        pthread_mutex_unlock(&h.mu);
        if (stop) break;
        gather(j, &direct[i], buf + (i % nslot) * stride);
        pthread_mutex_lock(&h.mu);
        h.ready[i % nslot] = 1;
        pthread_cond_broadcast(&h.cv);
        pthread_mutex_unlock(&h.mu);
      }
    }
  }
  pthread_cond_destroy(&h.cv);
  pthread_mutex_destroy(&h.mu);
  return err;
}

tsr_err tsr_output_chunks_write(hid_t d, hid_t dxpl, const tsr_output_slab *s,
                                const tsr_output_src *src, int threads, const char *path,
                                int *done) {
  *done = 0;
  gather_job j = {.src = *src};
#if !H5_VERSION_GE(1, 10, 2)
  return TSR_OK; /* no H5Dwrite_chunk: HDF5 writes every chunk */
#endif
  if (s->empty || !direct_ok(d, s->rank, j.cdim, &j.esize)) return TSR_OK;
  *done = 1;
  int off = 3 - s->rank;
  hsize_t gdim[3] = {1, 1, 1}, nchunk = 1;
  for (int a = 0; a < 3; ++a) {
    j.start[a] = a < off ? 0 : s->start[a - off];
    j.count[a] = a < off ? 1 : s->count[a - off];
    if (a >= off) gdim[a] = s->gdims[a - off];
    nchunk *= (j.start[a] + j.count[a] - 1) / j.cdim[a] - j.start[a] / j.cdim[a] + 1;
  }
  j.cbytes = j.esize * (size_t)(j.cdim[0] * j.cdim[1] * j.cdim[2]);
  region *direct = malloc(sizeof *direct * nchunk), *shared = malloc(sizeof *shared * nchunk);
  tsr_err err = TSR_OK;
  if (!direct || !shared) {
    err = tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__, "out of memory writing '%s'", path);
  } else {
    size_t nd, ns;
    split_chunks(&j, gdim, direct, &nd, shared, &ns);
    err = write_direct(d, dxpl, s->rank, &j, direct, nd, threads, path);
    if (!err && ns) err = write_shared(d, dxpl, s, &j, shared, ns, path);
    if (!err) n_direct += (long long)nd, n_shared += (long long)ns;
  }
  free(direct);
  free(shared);
  return err;
}
