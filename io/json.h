/* A small streaming JSON writer for run reports and benchmark records. Output is valid JSON
 * with two-space indentation; numbers use %.17g (round-trip exact), non-finite numbers are
 * written as null; strings are escaped. */
#ifndef TSR_JSON_H
#define TSR_JSON_H

#include <stdint.h>
#include <stdio.h>

typedef struct {
  FILE *fp;
  int depth;
  int first[32]; /* 1 while the container at this depth has no member yet */
} tsr_json;

void tsr_json_init(tsr_json *j, FILE *fp);
void tsr_json_object_begin(tsr_json *j, const char *key); /* key NULL inside arrays / at top */
void tsr_json_object_end(tsr_json *j);
void tsr_json_array_begin(tsr_json *j, const char *key);
void tsr_json_array_end(tsr_json *j);
void tsr_json_string(tsr_json *j, const char *key, const char *value);
void tsr_json_number(tsr_json *j, const char *key, double value);
void tsr_json_int(tsr_json *j, const char *key, int64_t value);
void tsr_json_bool(tsr_json *j, const char *key, int value);

#endif
