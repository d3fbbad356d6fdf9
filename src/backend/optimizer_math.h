// The optimizer updates' math (Keras 3's formulas): one element's step, and the per-step
// coefficients computed from the learning rate and the step counter. The CPU and CUDA kernels both
// call these, so the two backends evaluate the same expressions in the same order; the CPU kernels
// own the loops (and their vectorisation), the CUDA kernels one element per thread.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"

namespace tandem::backend::optimizer_math {

// Keras 3's decoupled weight decay (AdamW's, applied by every optimizer before its step):
// w −= w·(lr·weight_decay).
template <class T>
TANDEM_HD void decay_weight(T& w, T rate_times_decay) { w -= w * rate_times_decay; }

template <class T>
TANDEM_HD void sgd_step(T& w, const T& g, T lr) { w -= lr * g; }
template <class T>
TANDEM_HD void sgd_momentum_step(T& w, T& velocity, const T& g, T lr, T momentum, bool nesterov) {
  velocity = momentum * velocity - lr * g;
  w += nesterov ? momentum * velocity - lr * g : velocity;
}

// Adam folds both bias corrections into the step size; computed in double whatever T is.
template <class T>
struct AdamCoefficients {
  T alpha, decay, c1, c2;  // step size, lr·weight_decay, 1 − β₁, 1 − β₂
};
template <class T>
TANDEM_HD AdamCoefficients<T> adam_coefficients(float learning_rate, int64_t iteration, double b1, double b2, T weight_decay) {
  const double t = static_cast<double>(iteration + 1);
  const double lr = learning_rate;
  return {static_cast<T>(lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t))), static_cast<T>(lr) * weight_decay,
          static_cast<T>(1 - b1), static_cast<T>(1 - b2)};
}
template <class T>
TANDEM_HD void adam_step(T& w, T& m, T& v, const T& g, T alpha, T c1, T c2, T eps) {
  m += (g - m) * c1;
  v += (g * g - v) * c2;
  w -= alpha * m / (std::sqrt(v) + eps);
}

template <class T>
TANDEM_HD T rmsprop_increment(T& mean_square, const T& g, T lr, T rho, T eps) {
  mean_square = rho * mean_square + (T(1) - rho) * g * g;
  return lr * g / std::sqrt(mean_square + eps);
}
// With momentum, the increment goes through the velocity; without, straight into w.
template <class T>
TANDEM_HD void rmsprop_momentum(T& w, T& velocity, T increment, T momentum) {
  velocity = momentum * velocity + increment;
  w -= velocity;
}

template <class T>
TANDEM_HD void adagrad_step(T& w, T& accumulator, const T& g, T lr, T eps) {
  accumulator += g * g;
  w -= lr * g / std::sqrt(accumulator + eps);
}

// Nadam's momentum schedule: μₜ = β₁(1 − ½·0.96ᵗ).
TANDEM_HD double nadam_mu(double beta_1, double t) { return beta_1 * (1 - 0.5 * std::pow(0.96, t)); }
// u_product after step `iteration`: Πₜ = Πₜ₋₁·μₜ, rounded to T as it is stored.
template <class T>
TANDEM_HD T nadam_next_u_product(T u_product, int64_t iteration, double b1) {
  return static_cast<T>(u_product * nadam_mu(b1, static_cast<double>(iteration + 1)));
}
template <class T>
struct NadamCoefficients {
  T c_m, c_g, c_v, lr, c1, c2;  // weights of m and g in m̂, 1/(1 − β₂ᵗ), lr, 1 − β₁, 1 − β₂
};
// u_product is Πₜ₋₁, as nadam_u_product_update stored it after the previous step.
template <class T>
TANDEM_HD NadamCoefficients<T> nadam_coefficients(float learning_rate, int64_t iteration, T u_product, double b1, double b2) {
  const double t = static_cast<double>(iteration + 1);
  const double mu = nadam_mu(b1, t), mu_next = nadam_mu(b1, t + 1);
  // Rounded as nadam_u_product_update stores it, so this step sees the value Keras would.
  const double prod = static_cast<T>(u_product * mu), prod_next = prod * mu_next;
  return {static_cast<T>(mu_next / (1 - prod_next)), static_cast<T>((1 - mu) / (1 - prod)), static_cast<T>(1 / (1 - std::pow(b2, t))),
          static_cast<T>(learning_rate), static_cast<T>(1 - b1), static_cast<T>(1 - b2)};
}
template <class T>
TANDEM_HD void nadam_step(T& w, T& m, T& v, const T& g, T c_m, T c_g, T c_v, T lr, T c1, T c2, T eps) {
  m += (g - m) * c1;
  v += (g * g - v) * c2;
  const T m_hat = c_m * m + c_g * g;
  w -= lr * m_hat / (std::sqrt(v * c_v) + eps);
}

// Adamax: the bias correction 1 − β₁ᵗ in the variable's dtype, as Keras computes it.
template <class T>
struct AdamaxCoefficients {
  T lr, correction, c1, b2;  // lr, 1 − β₁ᵗ, 1 − β₁, β₂
};
template <class T>
TANDEM_HD AdamaxCoefficients<T> adamax_coefficients(float learning_rate, int64_t iteration, double b1, double b2) {
  const T power = static_cast<T>(std::pow(static_cast<T>(b1), static_cast<T>(iteration + 1)));
  return {static_cast<T>(learning_rate), T(1) - power, static_cast<T>(1 - b1), static_cast<T>(b2)};
}
template <class T>
TANDEM_HD void adamax_step(T& w, T& m, T& u, const T& g, T lr, T correction, T c1, T b2, T eps) {
  m += (g - m) * c1;
  const T decayed = b2 * u, magnitude = std::abs(g);
  u = decayed < magnitude ? magnitude : decayed;  // max(β₂·u, |g|)
  w -= (lr * m) / (correction * (u + eps));
}

template <class T>
TANDEM_HD void lion_step(T& w, T& m, const T& g, T lr, T b1, T b2) {
  const T c = b1 * m + (T(1) - b1) * g;
  w -= lr * static_cast<T>((c > 0) - (c < 0));  // sign, 0 at 0
  m = b2 * m + (T(1) - b2) * g;
}

// Keras's LossScaleOptimizer after a step: finite gradients count towards growth, and the
// dynamic_growth_steps-th finite step in a row doubles the scale; a step with an inf or NaN
// halves it. Either change restarts the count.
TANDEM_HD void loss_scale_step(int64_t& step_counter, float& scale, bool finite, int64_t dynamic_growth_steps) {
  if (!finite) {
    step_counter = 0;
    scale /= 2.0f;
  } else if (step_counter == dynamic_growth_steps - 1) {
    step_counter = 0;
    scale *= 2.0f;
  } else {
    ++step_counter;
  }
}

}  // namespace tandem::backend::optimizer_math
