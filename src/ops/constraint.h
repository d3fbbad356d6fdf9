// The kinds apply_constraint implements and Keras's epsilon, shared by the op's builders and kernels.
#pragma once

#include <cstdint>

namespace tandem::ops {

enum class ConstraintKind : int64_t { NonNeg = 0, UnitNorm = 1, MinMaxNorm = 2 };  // MaxNorm: MinMaxNorm(0, max, rate 1)
inline constexpr double kConstraintEpsilon = 1e-7;  // Keras's backend.epsilon()

}  // namespace tandem::ops
