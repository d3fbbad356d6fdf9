// The fused optimizer updates on CUDA devices: one thread per element through the same math as the
// CPU kernels (backend/optimizer_math.h). The learning rate, the step counter and Nadam's
// u_product change every step and live in device memory, so each thread reads them and derives the
// step's coefficients itself, once, before its grid-stride loop: no host read, no extra launch.
#include "backend/cuda/kernel_util.cuh"
#include "backend/optimizer_math.h"

namespace tandem::backend::cuda {

namespace {
using namespace optimizer_math;

// What every update reads: the variable, its gradient, the learning rate and the weight decay.
template <class T>
struct UpdateArgs {
  T* w;
  const T* g;
  const float* lr;  // learning rates are float32 variables, whatever the model's dtype
  T weight_decay;   // the optimizer's weight_decay attr, 0 when unset
  explicit UpdateArgs(const KernelInit& k)
      : w(static_cast<T*>(k.in[0])), g(in<T>(k, 1)), lr(in<float>(k, 2)),
        weight_decay(static_cast<T>(k.node.attrs.f("weight_decay", 0.0))) {}
  __device__ T rate() const { return static_cast<T>(*lr); }
  // Keras 3's decoupled weight decay before the step, as the CPU's UpdateArgs::decay.
  __device__ void decay(int64_t i, T rate) const {
    if (weight_decay != T(0)) decay_weight(w[i], rate * weight_decay);
  }
};

// Each update below is a functor: step_scalars() reads what the step changes and returns the
// coefficients; operator()(i, coefficients) updates element i.

template <class T>
struct Sgd {
  UpdateArgs<T> a;
  T* velocity;  // null without momentum
  T momentum;
  bool nesterov;
  explicit Sgd(const KernelInit& k)
      : a(k), velocity(k.in.size() > 3 ? static_cast<T*>(k.in[3]) : nullptr), momentum(static_cast<T>(k.node.attrs.f("momentum"))),
        nesterov(k.node.attrs.b("nesterov")) {}
  __device__ T step_scalars() const { return a.rate(); }
  __device__ void operator()(int64_t i, T lr) const {
    a.decay(i, lr);
    if (velocity) sgd_momentum_step(a.w[i], velocity[i], a.g[i], lr, momentum, nesterov);
    else sgd_step(a.w[i], a.g[i], lr);
  }
};

template <class T>
struct Adam {
  UpdateArgs<T> a;
  const int64_t* iteration;
  T *m, *v;
  double b1, b2;
  T eps;
  explicit Adam(const KernelInit& k)
      : a(k), iteration(in<int64_t>(k, 3)), m(static_cast<T*>(k.in[4])), v(static_cast<T*>(k.in[5])), b1(k.node.attrs.f("beta_1")),
        b2(k.node.attrs.f("beta_2")), eps(static_cast<T>(k.node.attrs.f("epsilon"))) {}
  __device__ AdamCoefficients<T> step_scalars() const { return adam_coefficients(*a.lr, *iteration, b1, b2, a.weight_decay); }
  __device__ void operator()(int64_t i, const AdamCoefficients<T>& c) const {
    if (a.weight_decay != T(0)) decay_weight(a.w[i], c.decay);  // AdamW
    adam_step(a.w[i], m[i], v[i], a.g[i], c.alpha, c.c1, c.c2, eps);
  }
};

template <class T>
struct Rmsprop {
  UpdateArgs<T> a;
  T* mean_square;
  T* velocity;  // null without momentum
  T rho, eps, momentum;
  explicit Rmsprop(const KernelInit& k)
      : a(k), mean_square(static_cast<T*>(k.in[3])), velocity(k.in.size() > 4 ? static_cast<T*>(k.in[4]) : nullptr),
        rho(static_cast<T>(k.node.attrs.f("rho"))), eps(static_cast<T>(k.node.attrs.f("epsilon"))),
        momentum(static_cast<T>(k.node.attrs.f("momentum"))) {}
  __device__ T step_scalars() const { return a.rate(); }
  __device__ void operator()(int64_t i, T lr) const {
    a.decay(i, lr);
    const T increment = rmsprop_increment(mean_square[i], a.g[i], lr, rho, eps);
    if (velocity) rmsprop_momentum(a.w[i], velocity[i], increment, momentum);
    else a.w[i] -= increment;
  }
};

template <class T>
struct Adagrad {
  UpdateArgs<T> a;
  T* accumulator;
  T eps;
  explicit Adagrad(const KernelInit& k)
      : a(k), accumulator(static_cast<T*>(k.in[3])), eps(static_cast<T>(k.node.attrs.f("epsilon"))) {}
  __device__ T step_scalars() const { return a.rate(); }
  __device__ void operator()(int64_t i, T lr) const {
    a.decay(i, lr);
    adagrad_step(a.w[i], accumulator[i], a.g[i], lr, eps);
  }
};

template <class T>
struct Nadam {
  UpdateArgs<T> a;
  const int64_t* iteration;
  T *m, *v;
  const T* u_product;  // Πₜ₋₁: nadam_u_product_update stores Πₜ after every update
  double b1, b2;
  T eps;
  explicit Nadam(const KernelInit& k)
      : a(k), iteration(in<int64_t>(k, 3)), m(static_cast<T*>(k.in[4])), v(static_cast<T*>(k.in[5])), u_product(in<T>(k, 6)),
        b1(k.node.attrs.f("beta_1")), b2(k.node.attrs.f("beta_2")), eps(static_cast<T>(k.node.attrs.f("epsilon"))) {}
  __device__ NadamCoefficients<T> step_scalars() const { return nadam_coefficients(*a.lr, *iteration, *u_product, b1, b2); }
  __device__ void operator()(int64_t i, const NadamCoefficients<T>& c) const {
    a.decay(i, c.lr);
    nadam_step(a.w[i], m[i], v[i], a.g[i], c.c_m, c.c_g, c.c_v, c.lr, c.c1, c.c2, eps);
  }
};

template <class T>
struct Adamax {
  UpdateArgs<T> a;
  const int64_t* iteration;
  T *m, *u;
  double b1, b2;
  T eps;
  explicit Adamax(const KernelInit& k)
      : a(k), iteration(in<int64_t>(k, 3)), m(static_cast<T*>(k.in[4])), u(static_cast<T*>(k.in[5])), b1(k.node.attrs.f("beta_1")),
        b2(k.node.attrs.f("beta_2")), eps(static_cast<T>(k.node.attrs.f("epsilon"))) {}
  __device__ AdamaxCoefficients<T> step_scalars() const { return adamax_coefficients<T>(*a.lr, *iteration, b1, b2); }
  __device__ void operator()(int64_t i, const AdamaxCoefficients<T>& c) const {
    a.decay(i, c.lr);
    adamax_step(a.w[i], m[i], u[i], a.g[i], c.lr, c.correction, c.c1, c.b2, eps);
  }
};

template <class T>
struct Lion {
  UpdateArgs<T> a;
  T* m;
  T b1, b2;
  explicit Lion(const KernelInit& k)
      : a(k), m(static_cast<T*>(k.in[3])), b1(static_cast<T>(k.node.attrs.f("beta_1"))), b2(static_cast<T>(k.node.attrs.f("beta_2"))) {}
  __device__ T step_scalars() const { return a.rate(); }
  __device__ void operator()(int64_t i, T lr) const {
    a.decay(i, lr);
    lion_step(a.w[i], m[i], a.g[i], lr, b1, b2);
  }
};

// The scalar updates run as one element: they read the step counter like the others.
template <class T>
struct NadamUProduct {
  T* u_product;
  const int64_t* iteration;
  double b1;
  explicit NadamUProduct(const KernelInit& k)
      : u_product(static_cast<T*>(k.in[0])), iteration(in<int64_t>(k, 1)), b1(k.node.attrs.f("beta_1")) {}
  __device__ int64_t step_scalars() const { return *iteration; }
  __device__ void operator()(int64_t, int64_t step) const { *u_product = nadam_next_u_product(*u_product, step, b1); }
};

template <class T>
struct Increment {
  T* counter;
  explicit Increment(const KernelInit& k) : counter(static_cast<T*>(k.in[0])) {}
  __device__ T step_scalars() const { return *counter; }
  __device__ void operator()(int64_t, T count) const { *counter = count + 1; }
};

// nonfinite: null, or a LossScaleOptimizer's flag for the step; the update is skipped when it is
// not 0 (read on the device, so that a recorded step needs no host decision).
template <class Update>
__global__ void update_kernel(Update update, int64_t n, const float* nonfinite) {
  if (nonfinite && *nonfinite != 0.0f) return;
  const auto coefficients = update.step_scalars();
  TANDEM_CUDA_LOOP(i, n) update(i, coefficients);
}

// The kernel of update U over its first input's elements (the variable; the scalar for the
// scalar updates). A node with the "skippable" attr has the flag as one more input, last.
template <template <class> class U>
struct Kernel {
  template <class T>
  static KernelFn make(const KernelInit& init) {
    KernelInit k = init;
    const float* nonfinite = nullptr;
    if (k.node.attrs.b("skippable")) {
      nonfinite = static_cast<const float*>(k.in.back());
      k.in.pop_back();
      k.in_types.pop_back();
    }
    const U<T> update(k);
    const int64_t n = numel(k.in_types[0]);
    if (n == 0) return {};
    const unsigned grid = blocks_for(n, context(k));
    const unsigned block = n < kBlock ? static_cast<unsigned>(n) : unsigned(kBlock);
    cudaStream_t s = stream(k);
    const std::string label = kernel_label(k);
    return [=] {
      update_kernel<<<grid, block, 0, s>>>(update, n, nonfinite);
      check_launch(label);
    };
  }
};
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("sgd_update", Kernel<Sgd>::make);
REGISTER_CUDA_FLOAT_KERNEL("adam_update", Kernel<Adam>::make);
REGISTER_CUDA_FLOAT_KERNEL("rmsprop_update", Kernel<Rmsprop>::make);
REGISTER_CUDA_FLOAT_KERNEL("adagrad_update", Kernel<Adagrad>::make);
REGISTER_CUDA_FLOAT_KERNEL("nadam_update", Kernel<Nadam>::make);
REGISTER_CUDA_FLOAT_KERNEL("nadam_u_product_update", Kernel<NadamUProduct>::make);
REGISTER_CUDA_FLOAT_KERNEL("lion_update", Kernel<Lion>::make);
REGISTER_CUDA_FLOAT_KERNEL("adamax_update", Kernel<Adamax>::make);
REGISTER_KERNEL("increment", DeviceKind::Cuda, DType::I64, Kernel<Increment>::make<int64_t>);

}  // namespace tandem::backend::cuda
