// Per-element math of the losses and metric counts, compiled by both backends (TANDEM_HD): the
// CPU and CUDA kernels call these same functions, so the CPU tests cover the GPU's formulas and
// clipping constants too. Only functions CUDA device code has may be used here (no std::clamp or
// std::max: they are host-only constexpr functions; clip and larger spell them out).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"
#include "tandem/tensor.h"

namespace tandem::backend::loss {

constexpr double kEpsilon = 1e-7;  // Keras's backend epsilon, used for clipping probabilities

// std::max and std::clamp, the same comparisons in the same order.
template <class T> TANDEM_HD T larger(T a, T b) { return a < b ? b : a; }
template <class T> TANDEM_HD T clip(T v, T lo, T hi) {
  const T low_clipped = larger(v, lo);
  return hi < low_clipped ? hi : low_clipped;
}
template <class T> TANDEM_HD T clip_probability(T p) { return clip(p, T(kEpsilon), T(1 - kEpsilon)); }

// Target probability of class j in row r: one-hot of an integer label, or the dense target.
template <class T>
struct Target {
  const void* data;
  DType dtype;
  bool sparse;
  int64_t classes;
  TANDEM_HD T at(int64_t r, int64_t j) const {
    if (!sparse) return static_cast<const T*>(data)[r * classes + j];
    const int64_t label = dtype == DType::I32 ? static_cast<const int32_t*>(data)[r] : static_cast<const int64_t*>(data)[r];
    return label == j ? T(1) : T(0);
  }
};

// Cross-entropy terms of class j, subtracted from the row's loss: from logits z with the row's
// log-sum-exp, or from predictions normalised by their row total and clipped.
template <class T> TANDEM_HD T ce_logit_term(T target, T z, T lse) { return target * (z - lse); }
template <class T> TANDEM_HD T ce_probability_term(T target, T pred, T total) {
  return target * std::log(clip_probability(pred / total));
}
// dz_j = dy·(Σt·softmax_j − t_j), with softmax_j = exp(z_j − max)/sum.
template <class T> TANDEM_HD T ce_logit_grad(T dy, T target, T target_sum, T z, T max, T sum) {
  return dy * (target_sum * std::exp(z - max) / sum - target);
}
// dL/dq_j for the normalised prediction p_j: −t_j/p_j inside the clip range, 0 where clipped.
template <class T> TANDEM_HD T ce_probability_grad(T target, T p) {
  return (p > T(kEpsilon) && p < T(1 - kEpsilon)) ? -target / p : T(0);
}

// Elementwise losses averaged over the last axis: loss(p, t) and its derivatives.
struct Bce {
  bool logits;
  template <class T> TANDEM_HD T loss(T p, T t) const {
    if (logits) return larger(p, T(0)) - p * t + std::log1p(std::exp(-std::abs(p)));
    p = clip_probability(p);
    return -(t * std::log(p) + (T(1) - t) * std::log(T(1) - p));
  }
  template <class T> TANDEM_HD T d_pred(T p, T t) const {
    if (logits) return T(1) / (T(1) + std::exp(-p)) - t;
    if (p <= T(kEpsilon) || p >= T(1 - kEpsilon)) return T(0);
    return -t / p + (T(1) - t) / (T(1) - p);
  }
  template <class T> TANDEM_HD T d_target(T p, T) const {
    if (logits) return -p;
    p = clip_probability(p);
    return -std::log(p) + std::log(T(1) - p);
  }
};
struct Squared {
  template <class T> TANDEM_HD T loss(T p, T t) const { return (p - t) * (p - t); }
  template <class T> TANDEM_HD T d_pred(T p, T t) const { return T(2) * (p - t); }
  template <class T> TANDEM_HD T d_target(T p, T t) const { return T(2) * (t - p); }
};
struct Absolute {
  template <class T> TANDEM_HD T loss(T p, T t) const { return std::abs(p - t); }
  template <class T> TANDEM_HD T d_pred(T p, T t) const { return p > t ? T(1) : p < t ? T(-1) : T(0); }
  template <class T> TANDEM_HD T d_target(T p, T t) const { return -d_pred(p, t); }
};

// Keras's Huber: ½e² where |e| ≤ δ, δ·|e| − ½δ² beyond, for e = p − t.
struct Huber {
  double delta;
  template <class T> TANDEM_HD T loss(T p, T t) const {
    const T e = p - t, a = std::abs(e), d = static_cast<T>(delta), half = T(0.5);
    return a <= d ? half * (e * e) : d * a - half * (d * d);
  }
  template <class T> TANDEM_HD T d_pred(T p, T t) const {
    const T e = p - t, d = static_cast<T>(delta);
    return std::abs(e) <= d ? e : (e > T(0) ? d : -d);
  }
  template <class T> TANDEM_HD T d_target(T p, T t) const { return -d_pred(p, t); }
};
// Keras's log_cosh: x + softplus(−2x) − log 2 for x = p − t (no overflow for large |x|); its
// derivative is tanh(x).
struct LogCosh {
  template <class T> TANDEM_HD T loss(T p, T t) const {
    const T x = p - t, z = T(-2) * x;
    const T softplus = std::log1p(std::exp(-std::abs(z))) + larger(z, T(0));
    return x + softplus - static_cast<T>(0.69314718055994530942);
  }
  template <class T> TANDEM_HD T d_pred(T p, T t) const { return std::tanh(p - t); }
  template <class T> TANDEM_HD T d_target(T p, T t) const { return -std::tanh(p - t); }
};
// Keras's poisson: p − t·log(p + ε).
struct Poisson {
  template <class T> TANDEM_HD T loss(T p, T t) const { return p - t * std::log(p + T(kEpsilon)); }
  template <class T> TANDEM_HD T d_pred(T p, T t) const { return T(1) - t / (p + T(kEpsilon)); }
  template <class T> TANDEM_HD T d_target(T p, T) const { return -std::log(p + T(kEpsilon)); }
};
// Keras's kl_divergence: t·log(t/p) with both clipped to [ε, 1], summed (not averaged) over the
// row. The clip passes no gradient where it binds.
struct KlDivergence {
  template <class T> TANDEM_HD static T clipped(T v) { return clip(v, T(kEpsilon), T(1)); }
  template <class T> TANDEM_HD static bool inside(T v) { return v > T(kEpsilon) && v < T(1); }
  template <class T> TANDEM_HD T loss(T p, T t) const {
    const T tc = clipped(t);
    return tc * std::log(tc / clipped(p));
  }
  template <class T> TANDEM_HD T d_pred(T p, T t) const { return inside(p) ? -clipped(t) / p : T(0); }
  template <class T> TANDEM_HD T d_target(T p, T t) const {
    return inside(t) ? std::log(t / clipped(p)) + T(1) : T(0);
  }
};

// The row's value from the sum of its c element losses: their mean, but KL divergence's sum.
template <class L> inline constexpr bool kSumsRow = false;
template <> inline constexpr bool kSumsRow<KlDivergence> = true;
template <class L, class T> TANDEM_HD T row_divisor(int64_t c) { return kSumsRow<L> ? T(1) : T(c); }

// Threshold i of confusion_counts' `count`: the attr `single` for one threshold, else Keras's AUC
// thresholds −1e-7, i/(count − 1) for i = 1 … count − 2, 1 + 1e-7.
template <class T> TANDEM_HD T confusion_threshold(int64_t i, int64_t count, double single) {
  if (count == 1) return static_cast<T>(single);
  if (i == 0) return static_cast<T>(0.0 - 1e-7);
  if (i == count - 1) return static_cast<T>(1.0 + 1e-7);
  return static_cast<T>(double(i) / double(count - 1));
}

}  // namespace tandem::backend::loss
