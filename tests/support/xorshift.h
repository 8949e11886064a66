/* xorshift64*: the tests' random values in [0, 1), the same for the same seed on every machine
 * (C and C++; tests/check.h, tests/unit/emulate_kernel.h). */
#ifndef TSR_TESTS_XORSHIFT_H
#define TSR_TESTS_XORSHIFT_H
#include <stdint.h>

static inline double test_uniform(uint64_t *state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return (double)((x * 0x2545f4914f6cdd1dull) >> 11) * (1.0 / 9007199254740992.0);
}
#endif
