/* test_rng.h: the tests' seeded random numbers. Include after defining
 * `static uint64_t rng = SEED;` (each test its own seed): next_u64 is
 * splitmix64 over rng, unif a uniform double in [-1, 1). */
#ifndef KILN_TEST_RNG_H
#define KILN_TEST_RNG_H
#include <stdint.h>

static uint64_t next_u64(void) {
  uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static double unif(void) { return (double)(next_u64() >> 11) / 9007199254740992.0 * 2 - 1; }
#endif
