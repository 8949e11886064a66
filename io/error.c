#include "io/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TSR_ERR_MSG_MAX 16384

static _Thread_local char msg_buf[TSR_ERR_MSG_MAX];

static void vappend(const char *fmt, va_list ap) {
  size_t n = strlen(msg_buf);
  if (n >= sizeof msg_buf - 1) return;
  vsnprintf(msg_buf + n, sizeof msg_buf - n, fmt, ap);
}

tsr_err tsr_err_set(tsr_err code, const char *file, int line, const char *fmt, ...) {
  /* formatted apart first: an argument may be the message being replaced (tsr_err_message) */
  char tmp[TSR_ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  memcpy(msg_buf, tmp, strlen(tmp) + 1);
  const char *dbg = getenv("TESSERA_DEBUG");
  if (dbg && *dbg && strcmp(dbg, "0") != 0) {
    size_t n = strlen(msg_buf);
    snprintf(msg_buf + n, sizeof msg_buf - n, " [%s:%d]", file, line);
  }
  return code;
}

void tsr_err_append(const char *fmt, ...) {
  if (msg_buf[0]) {
    size_t n = strlen(msg_buf);
    if (n < sizeof msg_buf - 1) { msg_buf[n] = '\n'; msg_buf[n + 1] = '\0'; }
  }
  va_list ap;
  va_start(ap, fmt);
  vappend(fmt, ap);
  va_end(ap);
}

void tsr_err_prefix(const char *fmt, ...) {
  char head[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(head, sizeof head, fmt, ap);
  va_end(ap);
  size_t h = strlen(head), n = strlen(msg_buf);
  if (h + n >= sizeof msg_buf) n = sizeof msg_buf - h - 1;
  memmove(msg_buf + h, msg_buf, n);
  memcpy(msg_buf, head, h);
  msg_buf[h + n] = '\0';
}

const char *tsr_err_message(void) { return msg_buf; }

void tsr_err_clear(void) { msg_buf[0] = '\0'; }

const char *tsr_err_name(tsr_err code) {
  switch (code) {
  case TSR_OK: return "success";
  case TSR_ERR_INPUT: return "input error";
  case TSR_ERR_IO: return "I/O error";
  case TSR_ERR_MEMORY: return "out of memory";
  case TSR_ERR_STATE: return "invalid call sequence";
  case TSR_ERR_MPI: return "MPI error";
  case TSR_ERR_HDF5: return "HDF5 error";
  case TSR_ERR_CUDA: return "CUDA error";
  case TSR_ERR_NCCL: return "NCCL error";
  case TSR_ERR_UNSUPPORTED: return "unsupported";
  case TSR_ERR_INTERNAL: return "internal error";
  }
  return "unknown error";
}
