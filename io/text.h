/* Small text helpers shared by the case reader, the expression compiler and code generation:
 * edit distance for "did you mean" suggestions, a growing string buffer, whole-file reads. */
#ifndef TSR_TEXT_H
#define TSR_TEXT_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Levenshtein distance between a and b (case-insensitive ASCII when nocase); words of 64
 * characters or more are never close: the result is then 64. */
int tsr_text_distance(const char *a, const char *b, int nocase);

/* A NUL-terminated string that grows as it is written. oom is set, and later writes are
 * dropped, when memory runs out; s is owned by the caller (free). Start from {0}. */
typedef struct {
  char *s;
  size_t n, cap;
  int oom;
} tsr_strbuf;

/* Reads the rest of fp into a new NUL-terminated string (owned by the caller) and sets *len to
 * its length; NULL when memory runs out. A read error shows as ferror(fp). */
char *tsr_text_read_all(FILE *fp, size_t *len);

/* As tsr_text_read_all, reading at most max + 1 bytes (max at most SIZE_MAX / 2): *len > max
 * says that fp holds more than max bytes, and the rest is left unread. For pipes and devices
 * too, whose size is not known before they are read. */
char *tsr_text_read_max(FILE *fp, size_t max, size_t *len);

/* Whether s is a whole number written in digits only (no sign, no spaces) within [lo, hi]; its
 * value in *out when it is (out may be NULL). */
int tsr_text_count(const char *s, long lo, long hi, long *out);

/* Appends printf-formatted text. */
void tsr_strbuf_printf(tsr_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif

#endif
