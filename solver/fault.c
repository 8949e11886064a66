/* Fault injection for the recovery tests (solver/fault.h). */
#define _POSIX_C_SOURCE 200809L

#include "solver/fault.h"
#include "solver/schedule.h"
#include "solver/supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io/output.h"

#define FORM "rank=R,step=S,kind=exit|hang|corrupt|enospc|graph|signal|signal2|nan"

static const char *const kind_names[] = {"none", "exit", "hang", "corrupt", "enospc",
                                           "graph", "signal", "signal2", "nan"};

const char *tsr_fault_kind_name(tsr_fault_kind k) {
  return (unsigned)k < sizeof kind_names / sizeof *kind_names ? kind_names[k] : "?";
}

static tsr_err bad(const char *spec, const char *what, const char *part) {
  return tsr_err_set(TSR_ERR_INPUT, __FILE__, __LINE__,
                     "--inject-fault '%s': %s%s%s%s; expected " FORM " (a testing aid)", spec, what,
                     part ? " '" : "", part ? part : "", part ? "'" : "");
}

/* a decimal integer in [lo, hi], the whole of s */
static int parse_int(const char *s, long long lo, long long hi, long long *out) {
  if (!*s || *s == '+' || *s == '-' || *s == ' ') return 0;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (*end || errno || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

tsr_err tsr_fault_parse(const char *spec, tsr_fault *f) {
  memset(f, 0, sizeof *f);
  TSR_CHECK(spec && *spec, TSR_ERR_INPUT, "--inject-fault needs a value: " FORM " (a testing aid)");
  char buf[256];
  if (strlen(spec) >= sizeof buf) return bad(spec, "too long", NULL);
  snprintf(buf, sizeof buf, "%s", spec);
  int seen_rank = 0, seen_step = 0, seen_kind = 0;
  char *save = NULL;
  for (char *part = strtok_r(buf, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(part, '=');
    if (!eq) return bad(spec, "expected KEY=VALUE, got", part);
    *eq = '\0';
    const char *key = part, *val = eq + 1;
    long long v;
    if (!strcmp(key, "rank")) {
      if (seen_rank++) return bad(spec, "rank is given twice", NULL);
      if (!parse_int(val, 0, 1 << 30, &v))
        return bad(spec, "rank must be an integer >= 0, got", val);
      f->rank = (int)v;
    } else if (!strcmp(key, "step")) {
      if (seen_step++) return bad(spec, "step is given twice", NULL);
      if (!parse_int(val, 0, INT64_MAX, &v))
        return bad(spec, "step must be an integer >= 1 (0 with kind=signal), got", val);
      f->step = (int64_t)v;
    } else if (!strcmp(key, "kind")) {
      if (seen_kind++) return bad(spec, "kind is given twice", NULL);
      for (int k = TSR_FAULT_EXIT; k <= TSR_FAULT_NAN; ++k)
        if (!strcmp(val, kind_names[k])) f->kind = (tsr_fault_kind)k;
      if (f->kind == TSR_FAULT_NONE) return bad(spec, "unknown kind", val);
    } else {
      return bad(spec, "unknown key", key);
    }
  }
  if (!seen_step) return bad(spec, "step=S is missing", NULL);
  if (!seen_kind) return bad(spec, "kind=K is missing", NULL);
  if (f->step == 0 && f->kind != TSR_FAULT_SIGNAL && f->kind != TSR_FAULT_SIGNAL2)
    return bad(spec, "step must be >= 1 (step=0, before the first step, is for kind=signal)",
               NULL);
  return TSR_OK;
}

int tsr_fault_armed(void) { return tsr_supervise_attempt() == 1; }

tsr_err tsr_fault_check(const tsr_fault *f, int size, int64_t nsteps, const tsr_case_every *every,
                        double dt) {
  /* a relaunch keeps the spec but never fires it: on fewer ranks its rank may be gone */
  if (!f || f->kind == TSR_FAULT_NONE || !tsr_fault_armed()) return TSR_OK;
  TSR_CHECK(f->rank < size, TSR_ERR_INPUT,
            "--inject-fault: rank=%d but the run has %d rank%s (0..%d)", f->rank, size,
            size == 1 ? "" : "s", size - 1);
  TSR_CHECK(f->step <= nsteps, TSR_ERR_INPUT,
            "--inject-fault: step=%" PRId64 " but the run has %" PRId64 " steps", f->step, nsteps);
  if (f->kind == TSR_FAULT_CORRUPT || f->kind == TSR_FAULT_ENOSPC)
    TSR_CHECK(every && tsr_schedule_due(every, f->step, dt) && f->step < nsteps, TSR_ERR_INPUT,
              "--inject-fault: kind=%s needs a step that writes a checkpoint (as "
              "output.checkpoint_every schedules them, below the last step %" PRId64 "), got "
              "step=%" PRId64,
              tsr_fault_kind_name(f->kind), nsteps, f->step);
  return TSR_OK;
}

/* File offset and size of the first chunk of /fields/<first>, or 0 when not found. In a file
 * written in parts (io/output.h, output.io: parts) the chunk is in the first part, whose name
 * replaces path (n bytes). */
static int first_chunk(char *path, size_t n, haddr_t *addr, hsize_t *size) {
  int found = 0;
  H5E_auto2_t fn;
  void *data;
  tsr_io_lock();
  H5Eget_auto2(H5E_DEFAULT, &fn, &data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t g = file < 0 ? -1 : H5Gopen2(file, "fields", H5P_DEFAULT);
  char name[256];
  if (g >= 0 && H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, 0, name, sizeof name,
                                   H5P_DEFAULT) > 0) {
    hid_t d = H5Dopen2(g, name, H5P_DEFAULT);
    hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
    unsigned mask;
    hsize_t off[3];
    if (sp >= 0 && H5Dget_chunk_info(d, sp, 0, off, &mask, addr, size) >= 0 && *size > 8 &&
        *addr != HADDR_UNDEF)
      found = 1;
    hid_t dcpl = found || d < 0 ? -1 : H5Dget_create_plist(d);
    char part[512];
    if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_VIRTUAL &&
        H5Pget_virtual_filename(dcpl, 0, part, sizeof part) > 0) {
      char *slash = strrchr(path, '/');
      if (slash) snprintf(slash + 1, n - (size_t)(slash + 1 - path), "%s", part);
      else snprintf(path, n, "%s", part);
      found = 2;
    }
    if (dcpl >= 0) H5Pclose(dcpl);
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
  }
  if (g >= 0) H5Gclose(g);
  if (file >= 0) H5Fclose(file);
  H5Eset_auto2(H5E_DEFAULT, fn, data);
  tsr_io_unlock();
  return found;
}

tsr_err tsr_fault_damage_file(const char *path) {
  haddr_t addr = 0;
  hsize_t size = 0;
  off_t at = 0; /* the superblock signature, when no chunk is found */
  size_t n = 8;
  char target[4096];
  snprintf(target, sizeof target, "%s", path);
  int found = first_chunk(target, sizeof target, &addr, &size);
  if (found == 2) found = first_chunk(target, sizeof target, &addr, &size) == 1;
  if (found) at = (off_t)(addr + size / 2);
  path = target;
  int fd = open(path, O_RDWR);
  unsigned char b[8] = {0};
  int ok = fd >= 0 && pread(fd, b, n, at) == (ssize_t)n;
  for (size_t i = 0; i < n; ++i) b[i] ^= 0xA5; /* flipped, so never equal to what was there */
  ok = ok && pwrite(fd, b, n, at) == (ssize_t)n && fsync(fd) == 0;
  int e = errno;
  if (fd >= 0) close(fd);
  TSR_CHECK(ok, TSR_ERR_IO, "--inject-fault kind=corrupt: cannot damage '%s': %s", path,
            strerror(e));
  return TSR_OK;
}

static int due(const tsr_fault *f, int64_t step) {
  return f && f->kind != TSR_FAULT_NONE && f->step == step && tsr_fault_armed();
}

void tsr_fault_before_checkpoint(const tsr_fault *f, int64_t step) {
  if (due(f, step) && f->kind == TSR_FAULT_ENOSPC) tsr_output_inject_enospc();
}

int tsr_fault_graph_due(const tsr_fault *f, int rank, int64_t step) {
  return due(f, step) && f->kind == TSR_FAULT_GRAPH && f->rank == rank;
}

void tsr_fault_after_step(const tsr_fault *f, int rank, int64_t step, const char *dir) {
  if (!due(f, step) || f->rank != rank) return;
  const char *say = "tessera: --inject-fault (testing aid):";
  fflush(stdout);
  if (f->kind == TSR_FAULT_EXIT) {
    fprintf(stderr, "%s rank %d exits after step %" PRId64 "\n", say, rank, step);
    fflush(stderr);
    _exit(1);
  }
  if (f->kind == TSR_FAULT_SIGNAL) { /* what a batch system sends before its time limit */
    fprintf(stderr, "%s rank %d sends itself SIGTERM after step %" PRId64 "\n", say, rank, step);
    fflush(stderr);
    raise(SIGTERM);
    return;
  }
  if (f->kind == TSR_FAULT_SIGNAL2) { /* a user who presses Ctrl-C twice */
    fprintf(stderr, "%s rank %d sends itself SIGTERM twice after step %" PRId64 "\n", say,
            rank, step);
    fflush(stderr);
    raise(SIGTERM);
    raise(SIGTERM);
    return;
  }
  if (f->kind == TSR_FAULT_HANG) {
    fprintf(stderr, "%s rank %d hangs after step %" PRId64 "\n", say, rank, step);
    fflush(stderr);
    for (;;) { /* outside MPI, like a rank stuck in a driver call */
      struct timespec ts = {3600, 0};
      nanosleep(&ts, NULL);
    }
  }
  if (f->kind == TSR_FAULT_CORRUPT) {
    char path[4200], name[256] = "";
    snprintf(path, sizeof path, "%s/latest", dir);
    FILE *fp = fopen(path, "r");
    if (fp) {
      if (fgets(name, sizeof name, fp)) name[strcspn(name, "\r\n")] = '\0';
      fclose(fp);
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (!name[0] || tsr_fault_damage_file(path) != TSR_OK)
      fprintf(stderr, "%s could not damage the newest checkpoint '%s': %s\n", say, path,
              name[0] ? tsr_err_message() : "no 'latest' in the output directory");
    else
      fprintf(stderr, "%s rank %d damaged '%s' after step %" PRId64 " and exits\n", say, rank,
              path, step);
    fflush(stderr);
    _exit(1);
  }
}
