#include "io/text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIST_MAX 64

static int fold(int c, int nocase) { return nocase && c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }

int tsr_text_distance(const char *a, const char *b, int nocase) {
  size_t la = strlen(a), lb = strlen(b);
  if (la >= DIST_MAX || lb >= DIST_MAX) return DIST_MAX;
  int prev[DIST_MAX + 1], cur[DIST_MAX + 1];
  for (size_t j = 0; j <= lb; ++j) prev[j] = (int)j;
  for (size_t i = 1; i <= la; ++i) {
    cur[0] = (int)i;
    for (size_t j = 1; j <= lb; ++j) {
      int sub = prev[j - 1] + (fold(a[i - 1], nocase) != fold(b[j - 1], nocase));
      int del = prev[j] + 1, ins = cur[j - 1] + 1;
      cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
    }
    memcpy(prev, cur, (lb + 1) * sizeof *cur);
  }
  return prev[lb];
}

void tsr_strbuf_printf(tsr_strbuf *b, const char *fmt, ...) {
  if (b->oom) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
  va_end(ap);
  if (k < 0) {
    b->oom = 1;
    return;
  }
  if (b->n + (size_t)k + 1 > b->cap) {
    size_t cap = 2 * (b->n + (size_t)k + 1) + 256;
    char *s = realloc(b->s, cap);
    if (!s) {
      b->oom = 1;
      return;
    }
    b->s = s;
    b->cap = cap;
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
  }
  b->n += (size_t)k;
}

char *tsr_text_read_max(FILE *fp, size_t max, size_t *len_out) {
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t want = cap - len - 1;
    if (want > max + 1 - len) want = max + 1 - len;
    size_t got = fread(buf + len, 1, want, fp);
    len += got;
    if (got < want || len > max) break; /* the end (or an error), or more than max */
    size_t bigger_cap = cap * 2 < max + 2 ? cap * 2 : max + 2;
    char *bigger = realloc(buf, bigger_cap);
    if (!bigger) {
      free(buf);
      buf = NULL;
    } else {
      buf = bigger;
      cap = bigger_cap;
    }
  }
  if (buf) buf[len] = '\0';
  if (len_out) *len_out = buf ? len : 0;
  return buf;
}

char *tsr_text_read_all(FILE *fp, size_t *len_out) {
  return tsr_text_read_max(fp, SIZE_MAX / 2, len_out);
}

int tsr_text_count(const char *s, long lo, long hi, long *out) {
  if (!s || !*s) return 0;
  for (const char *p = s; *p; ++p)
    if (*p < '0' || *p > '9') return 0;
  errno = 0;
  const long v = strtol(s, NULL, 10);
  if (errno || v < lo || v > hi) return 0;
  if (out) *out = v;
  return 1;
}
