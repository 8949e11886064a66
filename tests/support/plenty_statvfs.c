/* LD_PRELOAD shim for tests/scripts/fulldisk.sh: statvfs() reports 1 TiB free on every file
 * system, so tessera's free-space check before a write passes and the disk really fills
 * during the write (what another job filling the disk at that moment does), where the check
 * would otherwise refuse it beforehand. With TSR_SHIM_NO_FALLOCATE=1 in the environment,
 * fallocate() fails with EOPNOTSUPP, as on file systems without it, so nothing is reserved and
 * the write itself meets the full disk part way. Everything else about the file system is real. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/statvfs.h>

typedef int (*statvfs_fn)(const char *, struct statvfs *);
typedef int (*fallocate_fn)(int, int, off_t, off_t);

static void plenty(struct statvfs *b) {
  unsigned long unit = b->f_frsize ? b->f_frsize : 4096;
  b->f_bavail = b->f_bfree = (fsblkcnt_t)((1ULL << 40) / unit);
  if (b->f_blocks < b->f_bfree) b->f_blocks = b->f_bfree;
}

int statvfs(const char *path, struct statvfs *buf) {
  static statvfs_fn real;
  if (!real) real = (statvfs_fn)dlsym(RTLD_NEXT, "statvfs");
  int r = real ? real(path, buf) : -1;
  if (r == 0) plenty(buf);
  return r;
}

int fallocate(int fd, int mode, off_t offset, off_t len) {
  static fallocate_fn real;
  const char *no = getenv("TSR_SHIM_NO_FALLOCATE");
  if (no && no[0] == '1') {
    errno = EOPNOTSUPP;
    return -1;
  }
  if (!real) real = (fallocate_fn)dlsym(RTLD_NEXT, "fallocate");
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  return real(fd, mode, offset, len);
}
