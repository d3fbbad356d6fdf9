// Reproducible float64 test inputs, uniform in [-1, 1).
#pragma once

#include <random>
#include <vector>

inline std::vector<double> random_values(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = u(gen);
  return v;
}
