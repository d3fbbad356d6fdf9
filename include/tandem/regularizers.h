// Weight and activity regularizers (keras.regularizers) and weight constraints (keras.constraints),
// with Keras 3's classes, arguments and defaults.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tandem {

// A penalty added to the training (and evaluation) loss: of a weight (kernel_regularizer, ...),
// counted once per step whatever the strategy, or of a layer's output (activity_regularizer),
// divided by the batch size as Keras divides it. Default-constructed: none.
//   L1L2:                  l1·Σ|w| + l2·Σw²
//   OrthogonalRegularizer: factor·mean over pairs of |cos| between the rows (or columns) of a
//                          2-D weight, as Keras computes it.
struct Regularizer {
  Regularizer() = default;
  // A Keras name: "l1", "l2", "l1_l2", "orthogonal_regularizer" (or their class names), with
  // Keras's default arguments.
  Regularizer(const char* name);
  Regularizer(const std::string& name);

  std::string class_name;  // "L1", "L2", "L1L2", "OrthogonalRegularizer"; empty: none
  double l1 = 0.0, l2 = 0.0;
  double factor = 0.01;        // OrthogonalRegularizer
  std::string mode = "rows";   // OrthogonalRegularizer: "rows" or "columns"

  explicit operator bool() const { return !class_name.empty(); }
  bool operator==(const Regularizer&) const = default;
};

namespace regularizers {
Regularizer L1(double l1 = 0.01);
Regularizer L2(double l2 = 0.01);
Regularizer L1L2(double l1 = 0.0, double l2 = 0.0);
Regularizer OrthogonalRegularizer(double factor = 0.01, const std::string& mode = "rows");
}  // namespace regularizers

// A projection applied to a weight after each optimizer update (in the update phase, on the
// devices that hold the weight), as Keras's optimizers apply variable.constraint. Default-
// constructed: none. The norms are over `axis` (one or several axes; negative counts from the end):
//   MaxNorm:    w·clip(‖w‖, 0, max_value)/(ε + ‖w‖)
//   NonNeg:     max(w, 0)
//   UnitNorm:   w/(ε + ‖w‖)
//   MinMaxNorm: w·(rate·clip(‖w‖, min_value, max_value) + (1 − rate)·‖w‖)/(ε + ‖w‖)
// with ε = 1e-7 (Keras's backend.epsilon()).
struct Constraint {
  Constraint() = default;
  // A Keras name: "max_norm", "non_neg", "unit_norm", "min_max_norm" (or their class names).
  Constraint(const char* name);
  Constraint(const std::string& name);

  std::string class_name;  // "MaxNorm", "NonNeg", "UnitNorm", "MinMaxNorm"; empty: none
  double min_value = 0.0, max_value = 2.0, rate = 1.0;
  std::vector<int64_t> axis{0};

  explicit operator bool() const { return !class_name.empty(); }
  bool operator==(const Constraint&) const = default;
};

namespace constraints {
Constraint MaxNorm(double max_value = 2.0, std::vector<int64_t> axis = {0});
Constraint NonNeg();
Constraint UnitNorm(std::vector<int64_t> axis = {0});
Constraint MinMaxNorm(double min_value = 0.0, double max_value = 1.0, double rate = 1.0, std::vector<int64_t> axis = {0});
}  // namespace constraints

}  // namespace tandem
