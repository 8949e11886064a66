/* tessera error codes and the two macros that carry them up.
 *
 * Library functions return tsr_err (0 = success) and never exit(); only main() decides how a
 * run ends. A failing function records one user-facing message (what was wrong, where, what
 * to do) with tsr_err_set(); callers either pass the code up with TSR_CALL or add context.
 * The message buffer is per thread. */
#ifndef TSR_ERROR_H
#define TSR_ERROR_H

#include <stdarg.h>
#include <stdlib.h> /* calloc in TSR_ALLOC */

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  TSR_OK = 0,
  TSR_ERR_INPUT,       /* bad case file, flag, override or checkpoint: the user fixes input */
  TSR_ERR_IO,          /* file system: cannot create, open, write or rename */
  TSR_ERR_MEMORY,      /* allocation failed */
  TSR_ERR_STATE,       /* API misuse: a second begin, an end without begin, ... */
  TSR_ERR_MPI,         /* an MPI call failed */
  TSR_ERR_HDF5,        /* an HDF5 call failed */
  TSR_ERR_CUDA,        /* a CUDA runtime/driver/NVRTC call failed */
  TSR_ERR_NCCL,        /* an NCCL call failed */
  TSR_ERR_UNSUPPORTED, /* a valid request that this build or version cannot do */
  TSR_ERR_INTERNAL     /* a broken invariant: a bug in tessera */
} tsr_err;

/* Records the message (printf format) for the current thread, replacing any earlier one, and
 * returns code so that `return tsr_err_set(...)` reads naturally. file/line are the source
 * position, shown only when TESSERA_DEBUG is set in the environment. */
tsr_err tsr_err_set(tsr_err code, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Appends one more line to the current message (for validators that report every problem). */
void tsr_err_append(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prefixes the current message with context, e.g. "rank 3: ". */
void tsr_err_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The current thread's last message ("" if none). Borrowed; valid until the next set/clear. */
const char *tsr_err_message(void);

/* Forgets the current message. */
void tsr_err_clear(void);

/* A short name for a code ("input error", "I/O error", ...). Static storage. */
const char *tsr_err_name(tsr_err code);

#define TSR_CALL(expr)                                                                         \
  do {                                                                                         \
    tsr_err tsr_call_err_ = (expr);                                                            \
    if (tsr_call_err_ != TSR_OK) return tsr_call_err_;                                         \
  } while (0)

#define TSR_CHECK(cond, code, ...)                                                             \
  do {                                                                                         \
    if (!(cond)) return tsr_err_set((code), __FILE__, __LINE__, __VA_ARGS__);                  \
  } while (0)

/* Allocation that reports TSR_ERR_MEMORY with what was being allocated. */
#define TSR_ALLOC(ptr, count, what)                                                            \
  do {                                                                                         \
    size_t tsr_n_ = (size_t)(count);                                                           \
    (ptr) = calloc(tsr_n_ ? tsr_n_ : 1, sizeof(*(ptr)));                                       \
    if (!(ptr))                                                                                \
      return tsr_err_set(TSR_ERR_MEMORY, __FILE__, __LINE__,                                   \
                         "out of memory allocating %zu bytes for %s", tsr_n_ * sizeof(*(ptr)), \
                         (what));                                                              \
  } while (0)

#ifdef __cplusplus
}
#endif

#endif
