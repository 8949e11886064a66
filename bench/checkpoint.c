/* bench/checkpoint on CPU ranks: the ceiling is a memcpy of the staged bytes by all OpenMP
 * threads, as the host backend stages (bench/checkpoint_run.h says what is measured). */
#include "checkpoint_run.h"

static double ceiling_copy(size_t bytes, int device, int reps) { return host_copy(bytes, reps); }

static void ceiling_describe(int device, char *buf, size_t n) { host_describe(buf, n); }

int main(int argc, char **argv) { return bench_main(argc, argv, 0); }
