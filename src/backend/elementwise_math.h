// Per-element math that the CPU and CUDA kernels share, written once as TANDEM_HD functors and
// functions, so the GPU computes what the CPU tests check: the same operations in the same order,
// the same NaN and tie behaviour.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"

namespace tandem::backend {

inline constexpr double kInvSqrt2 = 0.70710678118654752440;
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;
inline constexpr double kSqrt2OverPi = 0.79788456080286535588;
inline constexpr double kGeluCubic = 0.044715;  // of the tanh approximation

// --- Activations: forward on x; gradients on (dy, the forward's output or input) ---

// NaN must come out as NaN (PyTorch, Keras): a NaN fails `x < 0` and passes through, where the
// usual `x > 0 ? x : 0` turned it into 0. Still a branch-free compare and mask.
struct Relu { template <class T> TANDEM_HD T operator()(T x) const { return x < T(0) ? T(0) : x; } };
struct Sigmoid { template <class T> TANDEM_HD T operator()(T x) const { return T(1) / (T(1) + std::exp(-x)); } };
struct Tanh { template <class T> TANDEM_HD T operator()(T x) const { return std::tanh(x); } };
struct GeluErf {
  template <class T> TANDEM_HD T operator()(T x) const { return T(0.5) * x * (T(1) + std::erf(x * T(kInvSqrt2))); }
};
struct GeluTanh {
  template <class T> TANDEM_HD T operator()(T x) const {
    return T(0.5) * x * (T(1) + std::tanh(T(kSqrt2OverPi) * (x + T(kGeluCubic) * x * x * x)));
  }
};

// PyTorch's threshold_backward on the output: a select, not dy·mask. Where y <= 0 the gradient is 0
// even if dy is NaN or inf; where y is NaN (a NaN input) dy passes through.
struct ReluGrad { template <class T> TANDEM_HD T operator()(T dy, T y) const { return y <= T(0) ? T(0) : dy; } };
struct SigmoidGrad { template <class T> TANDEM_HD T operator()(T dy, T y) const { return dy * (y * (T(1) - y)); } };
struct TanhGrad { template <class T> TANDEM_HD T operator()(T dy, T y) const { return dy * (T(1) - y * y); } };
struct GeluErfGrad {
  template <class T> TANDEM_HD T operator()(T dy, T x) const {
    return dy * (T(0.5) * (T(1) + std::erf(x * T(kInvSqrt2))) + x * T(kInvSqrt2Pi) * std::exp(T(-0.5) * x * x));
  }
};
struct GeluTanhGrad {
  template <class T> TANDEM_HD T operator()(T dy, T x) const {
    const T u = T(kSqrt2OverPi) * (x + T(kGeluCubic) * x * x * x);
    const T t = std::tanh(u);
    const T du = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluCubic) * x * x);
    return dy * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du);
  }
};

// --- Math ---

struct Exp { template <class T> TANDEM_HD T operator()(T x) const { return std::exp(x); } };
struct Log { template <class T> TANDEM_HD T operator()(T x) const { return std::log(x); } };
struct Sqrt { template <class T> TANDEM_HD T operator()(T x) const { return std::sqrt(x); } };
struct Square { template <class T> TANDEM_HD T operator()(T x) const { return x * x; } };
struct Abs { template <class T> TANDEM_HD T operator()(T x) const { return std::abs(x); } };
struct Sign {  // keeps 0 and NaN
  template <class T> TANDEM_HD T operator()(T x) const { return x > T(0) ? T(1) : x < T(0) ? T(-1) : x; }
};

// Comparisons give 1 or 0 in the operands' dtype; any comparison with NaN but != is false.
struct Greater { template <class T> TANDEM_HD T operator()(T a, T b) const { return T(a > b); } };
struct GreaterEqual { template <class T> TANDEM_HD T operator()(T a, T b) const { return T(a >= b); } };
struct Less { template <class T> TANDEM_HD T operator()(T a, T b) const { return T(a < b); } };
struct LessEqual { template <class T> TANDEM_HD T operator()(T a, T b) const { return T(a <= b); } };
struct EqualTo { template <class T> TANDEM_HD T operator()(T a, T b) const { return T(a == b); } };
struct NotEqual { template <class T> TANDEM_HD T operator()(T a, T b) const { return T(a != b); } };
// NaN in either operand propagates, as in PyTorch and NumPy; a tie gives b.
struct Maximum { template <class T> TANDEM_HD T operator()(T a, T b) const { return a != a || a > b ? a : b; } };
struct Minimum { template <class T> TANDEM_HD T operator()(T a, T b) const { return a != a || a < b ? a : b; } };

// --- Gradient clipping, moving averages, causal masks ---

// std::min(std::max(x, -limit), limit) spelled out (std::min and std::max are host-only): NaN
// passes through.
template <class T>
TANDEM_HD T clip_to_limit(T x, T limit) {
  const T at_least = x < -limit ? -limit : x;
  return limit < at_least ? limit : at_least;
}
// limit / std::max(√sum_of_squares, limit): 1 while the norm is within the limit, NaN for a NaN norm.
template <class T>
TANDEM_HD T norm_clip_factor(T sum_of_squares, T limit) {
  const T norm = std::sqrt(sum_of_squares);
  return limit / (norm < limit ? limit : norm);
}

template <class T>
TANDEM_HD T moving_average(T variable, T value, T keep, T take) { return variable * keep + value * take; }

// Row r of a causal mask over (..., queries, keys) is query r mod queries, which sees keys
// [0, visible): std::clamp(r mod queries + offset + 1, 0, keys).
TANDEM_HD int64_t causal_visible_keys(int64_t row, int64_t queries, int64_t offset, int64_t keys) {
  const int64_t visible = row % queries + offset + 1;
  return visible < 0 ? 0 : keys < visible ? keys : visible;
}

}  // namespace tandem::backend
