// Fused optimizer updates with Keras 3's formulas (see src/optimizers for the math in words).
#include <cmath>

#include "backend/cpu/kernel_util.h"

namespace tandem::backend::cpu {

namespace {
template <class T>
struct UpdateArgs {
  T* w;
  const T* g;
  const float* lr;  // learning rates are float32 variables, whatever the model's dtype
  int64_t n;
  T weight_decay;   // the optimizer's weight_decay attr, 0 when unset
  explicit UpdateArgs(const KernelInit& k)
      : w(static_cast<T*>(k.in[0])), g(in<T>(k, 1)), lr(static_cast<const float*>(k.in[2])), n(numel(k.in_types[0])),
        weight_decay(static_cast<T>(k.node.attrs.f("weight_decay", 0.0))) {}
  // Keras 3's decoupled weight decay, before the update: w −= w·wd·lr (AdamW's, on every optimizer).
  void decay(T rate) const {
    if (weight_decay == T(0)) return;
    const T d = rate * weight_decay;
    for (int64_t i = 0; i < n; ++i) w[i] -= w[i] * d;
  }
};

template <class T>
KernelFn make_sgd(const KernelInit& k) {
  const UpdateArgs<T> a(k);
  const T momentum = static_cast<T>(k.node.attrs.f("momentum"));
  const bool nesterov = k.node.attrs.b("nesterov");
  T* v = k.in.size() > 3 ? static_cast<T*>(k.in[3]) : nullptr;
  return [=] {
    const T lr = static_cast<T>(*a.lr);
    a.decay(lr);
    if (!v) {
      for (int64_t i = 0; i < a.n; ++i) a.w[i] -= lr * a.g[i];
      return;
    }
    for (int64_t i = 0; i < a.n; ++i) {
      v[i] = momentum * v[i] - lr * a.g[i];
      a.w[i] += nesterov ? momentum * v[i] - lr * a.g[i] : v[i];
    }
  };
}

template <class T>
KernelFn make_adam(const KernelInit& k) {
  const UpdateArgs<T> a(k);
  const int64_t* iteration = in<int64_t>(k, 3);
  T* m = static_cast<T*>(k.in[4]);
  T* v = static_cast<T*>(k.in[5]);
  const double b1 = k.node.attrs.f("beta_1"), b2 = k.node.attrs.f("beta_2");
  const T eps = static_cast<T>(k.node.attrs.f("epsilon"));
  const T wd = static_cast<T>(k.node.attrs.f("weight_decay", 0.0));
  Context* ctx = &context(k);
  return [=] {
    const double t = static_cast<double>(*iteration + 1);
    const double lr = *a.lr;
    const T alpha = static_cast<T>(lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t)));
    const T decay = static_cast<T>(lr) * wd;
    const T c1 = static_cast<T>(1 - b1), c2 = static_cast<T>(1 - b2);
    ctx->parallel_for(a.n, kElementwiseGrain, [&](int64_t s, int64_t e) {
      // Distinct buffers (restrict) and constants copied into locals: captured by reference,
      // GCC reloads them every element and leaves the loop scalar.
      const T k_alpha = alpha, k_c1 = c1, k_c2 = c2, k_eps = eps, k_decay = decay;
      T* __restrict w = a.w;
      const T* __restrict g = a.g;
      T* __restrict mm = m;
      T* __restrict vv = v;
      if (wd != T(0))  // AdamW: decoupled decay before the step
        for (int64_t i = s; i < e; ++i) w[i] -= w[i] * k_decay;
      for (int64_t i = s; i < e; ++i) {
        mm[i] += (g[i] - mm[i]) * k_c1;
        vv[i] += (g[i] * g[i] - vv[i]) * k_c2;
        w[i] -= k_alpha * mm[i] / (std::sqrt(vv[i]) + k_eps);
      }
    });
  };
}

template <class T>
KernelFn make_rmsprop(const KernelInit& k) {
  const UpdateArgs<T> a(k);
  T* ms = static_cast<T*>(k.in[3]);
  T* mom = k.in.size() > 4 ? static_cast<T*>(k.in[4]) : nullptr;
  const T rho = static_cast<T>(k.node.attrs.f("rho")), eps = static_cast<T>(k.node.attrs.f("epsilon"));
  const T momentum = static_cast<T>(k.node.attrs.f("momentum"));
  return [=] {
    const T lr = static_cast<T>(*a.lr);
    a.decay(lr);
    for (int64_t i = 0; i < a.n; ++i) {
      ms[i] = rho * ms[i] + (T(1) - rho) * a.g[i] * a.g[i];
      const T inc = lr * a.g[i] / std::sqrt(ms[i] + eps);
      if (mom) {
        mom[i] = momentum * mom[i] + inc;
        a.w[i] -= mom[i];
      } else {
        a.w[i] -= inc;
      }
    }
  };
}

template <class T>
KernelFn make_adagrad(const KernelInit& k) {
  const UpdateArgs<T> a(k);
  T* acc = static_cast<T*>(k.in[3]);
  const T eps = static_cast<T>(k.node.attrs.f("epsilon"));
  return [=] {
    const T lr = static_cast<T>(*a.lr);
    a.decay(lr);
    for (int64_t i = 0; i < a.n; ++i) {
      acc[i] += a.g[i] * a.g[i];
      a.w[i] -= lr * a.g[i] / std::sqrt(acc[i] + eps);
    }
  };
}

// Nadam's momentum schedule: μₜ = β₁(1 − ½·0.96ᵗ).
double nadam_mu(double beta_1, double t) { return beta_1 * (1 - 0.5 * std::pow(0.96, t)); }

template <class T>
KernelFn make_nadam(const KernelInit& k) {
  const UpdateArgs<T> a(k);
  const int64_t* iteration = in<int64_t>(k, 3);
  T* m = static_cast<T*>(k.in[4]);
  T* v = static_cast<T*>(k.in[5]);
  const T* u_product = in<T>(k, 6);  // Πₜ₋₁: nadam_u_product_update stores Πₜ after every update
  const double b1 = k.node.attrs.f("beta_1"), b2 = k.node.attrs.f("beta_2");
  const T eps = static_cast<T>(k.node.attrs.f("epsilon"));
  Context* ctx = &context(k);
  return [=] {
    const double t = static_cast<double>(*iteration + 1);
    const double mu = nadam_mu(b1, t), mu_next = nadam_mu(b1, t + 1);
    // Rounded as nadam_u_product_update stores it, so this step sees the value Keras would.
    const double prod = static_cast<T>(*u_product * mu), prod_next = prod * mu_next;
    const T c_m = static_cast<T>(mu_next / (1 - prod_next)), c_g = static_cast<T>((1 - mu) / (1 - prod));
    const T c_v = static_cast<T>(1 / (1 - std::pow(b2, t)));
    const T lr = static_cast<T>(*a.lr), c1 = static_cast<T>(1 - b1), c2 = static_cast<T>(1 - b2);
    a.decay(lr);
    ctx->parallel_for(a.n, kElementwiseGrain, [&](int64_t s, int64_t e) {
      // Locals and restrict, as in make_adam, so that GCC vectorises the loop.
      const T k_cm = c_m, k_cg = c_g, k_cv = c_v, k_lr = lr, k_c1 = c1, k_c2 = c2, k_eps = eps;
      T* __restrict w = a.w;
      const T* __restrict g = a.g;
      T* __restrict mm = m;
      T* __restrict vv = v;
      for (int64_t i = s; i < e; ++i) {
        mm[i] += (g[i] - mm[i]) * k_c1;
        vv[i] += (g[i] * g[i] - vv[i]) * k_c2;
        const T m_hat = k_cm * mm[i] + k_cg * g[i];
        w[i] -= k_lr * m_hat / (std::sqrt(vv[i] * k_cv) + k_eps);
      }
    });
  };
}

template <class T>
KernelFn make_nadam_u_product(const KernelInit& k) {
  T* u_product = static_cast<T*>(k.in[0]);
  const int64_t* iteration = in<int64_t>(k, 1);
  const double b1 = k.node.attrs.f("beta_1");
  return [=] { *u_product = static_cast<T>(*u_product * nadam_mu(b1, static_cast<double>(*iteration + 1))); };
}

template <class T>
KernelFn make_lion(const KernelInit& k) {
  const UpdateArgs<T> a(k);
  T* m = static_cast<T*>(k.in[3]);
  const T b1 = static_cast<T>(k.node.attrs.f("beta_1")), b2 = static_cast<T>(k.node.attrs.f("beta_2"));
  return [=] {
    const T lr = static_cast<T>(*a.lr);
    a.decay(lr);
    for (int64_t i = 0; i < a.n; ++i) {
      const T c = b1 * m[i] + (T(1) - b1) * a.g[i];
      a.w[i] -= lr * static_cast<T>((c > 0) - (c < 0));  // sign, 0 at 0
      m[i] = b2 * m[i] + (T(1) - b2) * a.g[i];
    }
  };
}

KernelFn make_increment(const KernelInit& k) {
  int64_t* counter = static_cast<int64_t*>(k.in[0]);
  return [=] { ++*counter; };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("sgd_update", make_sgd);
REGISTER_CPU_FLOAT_KERNEL("adam_update", make_adam);
REGISTER_CPU_FLOAT_KERNEL("rmsprop_update", make_rmsprop);
REGISTER_CPU_FLOAT_KERNEL("adagrad_update", make_adagrad);
REGISTER_CPU_FLOAT_KERNEL("nadam_update", make_nadam);
REGISTER_CPU_FLOAT_KERNEL("nadam_u_product_update", make_nadam_u_product);
REGISTER_CPU_FLOAT_KERNEL("lion_update", make_lion);
REGISTER_KERNEL("increment", DeviceKind::Cpu, DType::I64, make_increment);

}  // namespace tandem::backend::cpu
