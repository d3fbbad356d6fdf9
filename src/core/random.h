// Counter-based random numbers: a value depends only on (seed, counters), never on call order, so
// results are the same however work is split across threads or devices, CPU or GPU (the GPU
// kernels call the same functions).
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace tandem::rng {

TANDEM_HD uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

TANDEM_HD uint64_t hash(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0) {
  return mix(mix(mix(mix(seed) ^ a) ^ b) ^ c);
}

// Uniform in [0, 1) with 53 random bits.
TANDEM_HD double uniform(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0) {
  return static_cast<double>(hash(seed, a, b, c) >> 11) * 0x1.0p-53;
}

// A sequential generator for initialisers and shuffles.
class Stream {
 public:
  explicit Stream(uint64_t seed, uint64_t stream = 0) : seed_(hash(seed, stream)) {}
  uint64_t next() { return hash(seed_, counter_++); }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }  // bias below 2^-40 for n < 2^24

 private:
  uint64_t seed_;
  uint64_t counter_ = 0;
};

}  // namespace tandem::rng
