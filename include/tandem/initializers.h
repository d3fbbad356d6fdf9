// Weight initializers with Keras 3's classes, arguments and defaults (keras.initializers).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tandem {

// How a new weight is filled: a Keras initializer class and its arguments. It converts from
// Keras's string names, so `.kernel_initializer = "he_normal"` works as in Keras, and from the
// factories below: `.kernel_initializer = tandem::initializers::VarianceScaling(2.0, "fan_out")`.
// With a seed the values depend on that seed alone (the same seed gives the same values, as
// Keras's seeded initializers); without one they come from the global seed (set_random_seed).
struct Initializer {
  // A Keras name: "glorot_uniform", "GlorotUniform", "zeros", "random_normal", "orthogonal", ...
  // An unknown name is kept and refused, naming the layer, when a weight is made from it.
  Initializer(const char* name);
  Initializer(const std::string& name);

  std::string class_name;  // Keras's class: "GlorotUniform", "VarianceScaling", "Constant", ...
  double value = 0.0;      // Constant
  double gain = 1.0;       // Identity, Orthogonal
  double mean = 0.0, stddev = 0.05;        // RandomNormal, TruncatedNormal
  double minval = -0.05, maxval = 0.05;    // RandomUniform
  double scale = 1.0;                      // VarianceScaling (and its Glorot/He/LeCun presets)
  std::string mode = "fan_in";             // VarianceScaling: "fan_in", "fan_out" or "fan_avg"
  std::string distribution = "truncated_normal";  // "truncated_normal", "untruncated_normal", "uniform"
  std::optional<uint64_t> seed;            // the random classes' seed; none: the global seed's stream

  bool operator==(const Initializer&) const = default;
};

namespace initializers {
Initializer Constant(double value = 0.0);
Initializer Zeros();
Initializer Ones();
// The identity matrix times gain (2-D weights only), as Keras's Identity (eye(rows, cols)).
Initializer Identity(double gain = 1.0);
// An orthogonal matrix (rows: every axis but the last) times gain.
Initializer Orthogonal(double gain = 1.0, std::optional<uint64_t> seed = std::nullopt);
// Samples with variance scale / n, n the fan chosen by mode (Keras's compute_fans: a conv kernel
// (..., in, out) multiplies in and out by the receptive field). truncated_normal resamples beyond
// two standard deviations (stddev corrected for the truncation); uniform draws from ±sqrt(3·scale/n).
Initializer VarianceScaling(double scale = 1.0, const std::string& mode = "fan_in",
                            const std::string& distribution = "truncated_normal", std::optional<uint64_t> seed = std::nullopt);
Initializer TruncatedNormal(double mean = 0.0, double stddev = 0.05, std::optional<uint64_t> seed = std::nullopt);
Initializer RandomNormal(double mean = 0.0, double stddev = 0.05, std::optional<uint64_t> seed = std::nullopt);
Initializer RandomUniform(double minval = -0.05, double maxval = 0.05, std::optional<uint64_t> seed = std::nullopt);
// VarianceScaling presets: Glorot (scale 1, fan_avg), He (scale 2, fan_in), LeCun (scale 1, fan_in).
Initializer GlorotUniform(std::optional<uint64_t> seed = std::nullopt);
Initializer GlorotNormal(std::optional<uint64_t> seed = std::nullopt);
Initializer HeUniform(std::optional<uint64_t> seed = std::nullopt);
Initializer HeNormal(std::optional<uint64_t> seed = std::nullopt);
Initializer LecunUniform(std::optional<uint64_t> seed = std::nullopt);
Initializer LecunNormal(std::optional<uint64_t> seed = std::nullopt);
}  // namespace initializers

}  // namespace tandem
