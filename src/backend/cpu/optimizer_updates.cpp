// Fused optimizer updates with Keras 3's formulas (see src/optimizers for the math in words); the
// per-element math and per-step coefficients are backend/optimizer_math.h's, shared with CUDA.
#include "backend/cpu/kernel_util.h"
#include "backend/optimizer_math.h"

namespace tandem::backend::cpu {

namespace {
using namespace optimizer_math;

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
    for (int64_t i = 0; i < n; ++i) decay_weight(w[i], d);
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
      for (int64_t i = 0; i < a.n; ++i) sgd_step(a.w[i], a.g[i], lr);
      return;
    }
    for (int64_t i = 0; i < a.n; ++i) sgd_momentum_step(a.w[i], v[i], a.g[i], lr, momentum, nesterov);
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
    const AdamCoefficients<T> c = adam_coefficients(*a.lr, *iteration, b1, b2, wd);
    ctx->parallel_for(a.n, kElementwiseGrain, [&](int64_t s, int64_t e) {
      // Distinct buffers (restrict) and constants copied into locals: captured by reference,
      // GCC reloads them every element and leaves the loop scalar.
      const T k_alpha = c.alpha, k_c1 = c.c1, k_c2 = c.c2, k_eps = eps, k_decay = c.decay;
      T* __restrict w = a.w;
      const T* __restrict g = a.g;
      T* __restrict mm = m;
      T* __restrict vv = v;
      if (wd != T(0))  // AdamW: decoupled decay before the step
        for (int64_t i = s; i < e; ++i) decay_weight(w[i], k_decay);
      for (int64_t i = s; i < e; ++i) adam_step(w[i], mm[i], vv[i], g[i], k_alpha, k_c1, k_c2, k_eps);
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
      const T inc = rmsprop_increment(ms[i], a.g[i], lr, rho, eps);
      if (mom) rmsprop_momentum(a.w[i], mom[i], inc, momentum);
      else a.w[i] -= inc;
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
    for (int64_t i = 0; i < a.n; ++i) adagrad_step(a.w[i], acc[i], a.g[i], lr, eps);
  };
}

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
    const NadamCoefficients<T> c = nadam_coefficients(*a.lr, *iteration, *u_product, b1, b2);
    a.decay(c.lr);
    ctx->parallel_for(a.n, kElementwiseGrain, [&](int64_t s, int64_t e) {
      // Locals and restrict, as in make_adam, so that GCC vectorises the loop.
      const T k_cm = c.c_m, k_cg = c.c_g, k_cv = c.c_v, k_lr = c.lr, k_c1 = c.c1, k_c2 = c.c2, k_eps = eps;
      T* __restrict w = a.w;
      const T* __restrict g = a.g;
      T* __restrict mm = m;
      T* __restrict vv = v;
      for (int64_t i = s; i < e; ++i) nadam_step(w[i], mm[i], vv[i], g[i], k_cm, k_cg, k_cv, k_lr, k_c1, k_c2, k_eps);
    });
  };
}

template <class T>
KernelFn make_nadam_u_product(const KernelInit& k) {
  T* u_product = static_cast<T*>(k.in[0]);
  const int64_t* iteration = in<int64_t>(k, 1);
  const double b1 = k.node.attrs.f("beta_1");
  return [=] { *u_product = nadam_next_u_product(*u_product, *iteration, b1); };
}

template <class T>
KernelFn make_adamax(const KernelInit& k) {
  const UpdateArgs<T> a(k);
  const int64_t* iteration = in<int64_t>(k, 3);
  T* m = static_cast<T*>(k.in[4]);
  T* u = static_cast<T*>(k.in[5]);
  const double b1 = k.node.attrs.f("beta_1"), b2 = k.node.attrs.f("beta_2");
  const T eps = static_cast<T>(k.node.attrs.f("epsilon"));
  Context* ctx = &context(k);
  return [=] {
    const AdamaxCoefficients<T> c = adamax_coefficients<T>(*a.lr, *iteration, b1, b2);
    a.decay(c.lr);
    ctx->parallel_for(a.n, kElementwiseGrain, [&](int64_t s, int64_t e) {
      const T k_lr = c.lr, k_corr = c.correction, k_c1 = c.c1, k_b2 = c.b2, k_eps = eps;  // locals: see make_adam
      T* __restrict w = a.w;
      const T* __restrict g = a.g;
      T* __restrict mm = m;
      T* __restrict uu = u;
      for (int64_t i = s; i < e; ++i) adamax_step(w[i], mm[i], uu[i], g[i], k_lr, k_corr, k_c1, k_b2, k_eps);
    });
  };
}

template <class T>
KernelFn make_lion(const KernelInit& k) {
  const UpdateArgs<T> a(k);
  T* m = static_cast<T*>(k.in[3]);
  const T b1 = static_cast<T>(k.node.attrs.f("beta_1")), b2 = static_cast<T>(k.node.attrs.f("beta_2"));
  return [=] {
    const T lr = static_cast<T>(*a.lr);
    a.decay(lr);
    for (int64_t i = 0; i < a.n; ++i) lion_step(a.w[i], m[i], a.g[i], lr, b1, b2);
  };
}

template <class T>
KernelFn make_increment(const KernelInit& k) {
  T* counter = static_cast<T*>(k.in[0]);
  return [=] { ++*counter; };
}

// A node with the "skippable" attr (a LossScaleOptimizer's step) has one more input, last: a
// float32 flag. The update made from the other inputs runs only when the flag is 0.
template <KernelFn (*Make)(const KernelInit&)>
KernelFn skippable(const KernelInit& k) {
  if (!k.node.attrs.b("skippable")) return Make(k);
  KernelInit rest = k;
  const float* nonfinite = static_cast<const float*>(rest.in.back());
  rest.in.pop_back();
  rest.in_types.pop_back();
  KernelFn update = Make(rest);
  return [=] {
    if (*nonfinite == 0.0f) update();
  };
}
}  // namespace

#define REGISTER_CPU_UPDATE(op, make)                                     \
  REGISTER_KERNEL(op, DeviceKind::Cpu, DType::F32, skippable<make<float>>); \
  REGISTER_KERNEL(op, DeviceKind::Cpu, DType::F64, skippable<make<double>>)

REGISTER_CPU_UPDATE("sgd_update", make_sgd);
REGISTER_CPU_UPDATE("adam_update", make_adam);
REGISTER_CPU_UPDATE("rmsprop_update", make_rmsprop);
REGISTER_CPU_UPDATE("adagrad_update", make_adagrad);
REGISTER_CPU_UPDATE("nadam_update", make_nadam);
REGISTER_CPU_UPDATE("nadam_u_product_update", make_nadam_u_product);
REGISTER_CPU_UPDATE("lion_update", make_lion);
REGISTER_CPU_UPDATE("adamax_update", make_adamax);
REGISTER_KERNEL("increment", DeviceKind::Cpu, DType::I64, skippable<make_increment<int64_t>>);

}  // namespace tandem::backend::cpu
