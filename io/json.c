#include "io/json.h"

#include <inttypes.h>
#include <math.h>

#define TSR_JSON_MAX_DEPTH ((int)(sizeof(((tsr_json *)0)->first) / sizeof(int)))

/* Deeper nesting than first[] can track still produces text; commas there share the last
 * slot, which is wrong only for documents nobody writes by hand. */
static int *first_slot(tsr_json *j, int depth) {
  return &j->first[depth < TSR_JSON_MAX_DEPTH ? depth : TSR_JSON_MAX_DEPTH - 1];
}

static void indent(tsr_json *j, int depth) {
  for (int i = 0; i < depth; ++i) fputs("  ", j->fp);
}

static void write_string(FILE *fp, const char *s) {
  fputc('"', fp);
  for (const unsigned char *p = (const unsigned char *)s; *p; ++p) {
    switch (*p) {
    case '"': fputs("\\\"", fp); break;
    case '\\': fputs("\\\\", fp); break;
    case '\b': fputs("\\b", fp); break;
    case '\f': fputs("\\f", fp); break;
    case '\n': fputs("\\n", fp); break;
    case '\r': fputs("\\r", fp); break;
    case '\t': fputs("\\t", fp); break;
    default:
      /* bytes >= 0x80 pass through: UTF-8 is valid JSON as it is */
      if (*p < 0x20) fprintf(fp, "\\u%04x", *p);
      else fputc(*p, fp);
    }
  }
  fputc('"', fp);
}

/* Separator, newline, indentation and key before any value. Keys are ignored at the top
 * level, where JSON has no place for them. */
static void member(tsr_json *j, const char *key) {
  if (j->depth == 0) return;
  int *first = first_slot(j, j->depth);
  if (!*first) fputc(',', j->fp);
  *first = 0;
  fputc('\n', j->fp);
  indent(j, j->depth);
  if (key) {
    write_string(j->fp, key);
    fputs(": ", j->fp);
  }
}

static void begin(tsr_json *j, const char *key, char open) {
  member(j, key);
  fputc(open, j->fp);
  ++j->depth;
  *first_slot(j, j->depth) = 1;
}

static void end(tsr_json *j, char close) {
  if (j->depth <= 0) return; /* unbalanced end: writing it would only corrupt the text */
  int empty = *first_slot(j, j->depth);
  --j->depth;
  if (!empty) {
    fputc('\n', j->fp);
    indent(j, j->depth);
  }
  fputc(close, j->fp);
  if (j->depth == 0) fputc('\n', j->fp);
}

/* A scalar at the top level is a whole document and ends its line, like a container. */
static void scalar_done(tsr_json *j) {
  if (j->depth == 0) fputc('\n', j->fp);
}

void tsr_json_init(tsr_json *j, FILE *fp) {
  j->fp = fp;
  j->depth = 0;
  for (int i = 0; i < TSR_JSON_MAX_DEPTH; ++i) j->first[i] = 1;
}

void tsr_json_object_begin(tsr_json *j, const char *key) { begin(j, key, '{'); }
void tsr_json_object_end(tsr_json *j) { end(j, '}'); }
void tsr_json_array_begin(tsr_json *j, const char *key) { begin(j, key, '['); }
void tsr_json_array_end(tsr_json *j) { end(j, ']'); }

void tsr_json_string(tsr_json *j, const char *key, const char *value) {
  member(j, key);
  if (value) write_string(j->fp, value);
  else fputs("null", j->fp);
  scalar_done(j);
}

void tsr_json_number(tsr_json *j, const char *key, double value) {
  member(j, key);
  /* JSON has no NaN or infinity; null keeps the document parseable */
  if (isfinite(value)) fprintf(j->fp, "%.17g", value);
  else fputs("null", j->fp);
  scalar_done(j);
}

void tsr_json_int(tsr_json *j, const char *key, int64_t value) {
  member(j, key);
  fprintf(j->fp, "%" PRId64, value);
  scalar_done(j);
}

void tsr_json_bool(tsr_json *j, const char *key, int value) {
  member(j, key);
  fputs(value ? "true" : "false", j->fp);
  scalar_done(j);
}
