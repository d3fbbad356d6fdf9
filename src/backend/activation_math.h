// Per-element math of Keras 3's further activations (silu, elu, selu, leaky_relu, softplus,
// softsign, hard_sigmoid, hard_silu, mish, relu6 and the general relu of the ReLU layer), shared by
// the CPU and CUDA kernels as TANDEM_HD functors. Each forward follows the JAX backend's formula
// (jax.nn, keras/src/ops/nn.py) so Tandem predicts what Keras does; each gradient functor takes
// (dy, x), the forward's input. Parameters are held in double and rounded to T when applied, as
// JAX rounds a Python float to the tensor's dtype.
#pragma once

#include <cmath>

#include "core/host_device.h"

namespace tandem::backend {

// jax.nn.selu's constants.
inline constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
inline constexpr double kSeluScale = 1.0507009873554804934193349852946;

namespace activation_detail {
template <class T> TANDEM_HD T sigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }
// jnp.logaddexp(x, 0): stable for large |x| in both directions.
template <class T> TANDEM_HD T softplus(T x) { return (x > T(0) ? x : T(0)) + std::log1p(std::exp(-std::abs(x))); }
// jax.nn.relu6: min(max(x, 0), 6), NaN passing through.
template <class T> TANDEM_HD T relu6(T x) {
  const T a = x < T(0) ? T(0) : x;
  return a > T(6) ? T(6) : a;
}
// jax.nn.elu: expm1 keeps small negative inputs exact.
template <class T> TANDEM_HD T elu(T x, T alpha) { return x > T(0) ? x : alpha * std::expm1(x); }
template <class T> TANDEM_HD T elu_slope(T x, T alpha) { return x > T(0) ? T(1) : alpha * std::exp(x); }
}  // namespace activation_detail

// x · sigmoid(x) (also "swish").
struct Silu { template <class T> TANDEM_HD T operator()(T x) const { return x * activation_detail::sigmoid(x); } };
struct SiluGrad {
  template <class T> TANDEM_HD T operator()(T dy, T x) const {
    const T s = activation_detail::sigmoid(x);
    return dy * (s * (T(1) + x * (T(1) - s)));
  }
};

// x for x > 0, alpha · (eˣ − 1) otherwise.
struct Elu {
  double alpha = 1;
  template <class T> TANDEM_HD T operator()(T x) const { return activation_detail::elu(x, T(alpha)); }
};
struct EluGrad {
  double alpha = 1;
  template <class T> TANDEM_HD T operator()(T dy, T x) const { return dy * activation_detail::elu_slope(x, T(alpha)); }
};

// scale · elu(x, alpha) with jax.nn.selu's constants.
struct Selu {
  template <class T> TANDEM_HD T operator()(T x) const { return T(kSeluScale) * activation_detail::elu(x, T(kSeluAlpha)); }
};
struct SeluGrad {
  template <class T> TANDEM_HD T operator()(T dy, T x) const {
    return dy * (T(kSeluScale) * activation_detail::elu_slope(x, T(kSeluAlpha)));
  }
};

// x for x >= 0, negative_slope · x otherwise (jax.nn.leaky_relu).
struct LeakyRelu {
  double negative_slope = 0.2;
  template <class T> TANDEM_HD T operator()(T x) const { return x >= T(0) ? x : T(negative_slope) * x; }
};
struct LeakyReluGrad {
  double negative_slope = 0.2;
  template <class T> TANDEM_HD T operator()(T dy, T x) const { return x >= T(0) ? dy : T(negative_slope) * dy; }
};

// log(1 + eˣ); its derivative is sigmoid(x).
struct Softplus { template <class T> TANDEM_HD T operator()(T x) const { return activation_detail::softplus(x); } };
struct SoftplusGrad {
  template <class T> TANDEM_HD T operator()(T dy, T x) const { return dy * activation_detail::sigmoid(x); }
};

// x / (|x| + 1).
struct Softsign { template <class T> TANDEM_HD T operator()(T x) const { return x / (std::abs(x) + T(1)); } };
struct SoftsignGrad {
  template <class T> TANDEM_HD T operator()(T dy, T x) const {
    const T d = std::abs(x) + T(1);
    return dy / (d * d);
  }
};

// Keras 3's (and JAX's) relu6(x + 3) / 6, not Keras 2's 0.2·x + 0.5.
struct HardSigmoid {
  template <class T> TANDEM_HD T operator()(T x) const { return activation_detail::relu6(x + T(3)) / T(6); }
};
struct HardSigmoidGrad {
  template <class T> TANDEM_HD T operator()(T dy, T x) const { return x > T(-3) && x < T(3) ? dy / T(6) : T(0); }
};

// x · hard_sigmoid(x) (also "hard_swish").
struct HardSilu {
  template <class T> TANDEM_HD T operator()(T x) const { return x * (activation_detail::relu6(x + T(3)) / T(6)); }
};
struct HardSiluGrad {
  template <class T> TANDEM_HD T operator()(T dy, T x) const {
    if (x <= T(-3)) return T(0);
    if (x >= T(3)) return dy;
    return dy * ((T(2) * x + T(3)) / T(6));
  }
};

// x · tanh(softplus(x)).
struct Mish {
  template <class T> TANDEM_HD T operator()(T x) const { return x * std::tanh(activation_detail::softplus(x)); }
};
struct MishGrad {
  template <class T> TANDEM_HD T operator()(T dy, T x) const {
    const T t = std::tanh(activation_detail::softplus(x));
    return dy * (t + x * (T(1) - t * t) * activation_detail::sigmoid(x));
  }
};

// min(max(x, 0), 6).
struct Relu6 { template <class T> TANDEM_HD T operator()(T x) const { return activation_detail::relu6(x); } };
struct Relu6Grad {
  template <class T> TANDEM_HD T operator()(T dy, T x) const { return x > T(0) && x < T(6) ? dy : T(0); }
};

// Keras's activations.relu(x, negative_slope, max_value, threshold) (the ReLU layer): x above the
// threshold, else 0; clipped to [0, max_value] when one is given; minus
// negative_slope · max(threshold − x, 0). Keras's special cases (leaky_relu, relu6) give the same
// values. A NaN input comes out NaN.
struct ReluGeneral {
  double negative_slope = 0, max_value = 0, threshold = 0;
  bool has_max_value = false;
  template <class T> TANDEM_HD T operator()(T x) const {
    T a = x <= T(threshold) ? T(0) : x;
    if (has_max_value) a = a < T(0) ? T(0) : a > T(max_value) ? T(max_value) : a;
    const T below = T(threshold) - x;
    return a - T(negative_slope) * (below > T(0) ? below : T(0));
  }
};
struct ReluGeneralGrad {
  double negative_slope = 0, max_value = 0, threshold = 0;
  bool has_max_value = false;
  template <class T> TANDEM_HD T operator()(T dy, T x) const {
    const bool passes = x > T(threshold) && (!has_max_value || (x > T(0) && x < T(max_value)));
    const T slope = (passes ? T(1) : T(0)) + (x < T(threshold) ? T(negative_slope) : T(0));
    return dy * slope;
  }
};

}  // namespace tandem::backend
