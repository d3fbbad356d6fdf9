// The 16-bit float types of the CPU kernels. A kernel for DType::BF16 or DType::F16 is the float
// kernel's template instantiated on Eigen::bfloat16 or Eigen::half (the same bits as
// tandem::bfloat16 and tandem::float16, with arithmetic). Per-element math on them runs in float32
// and is rounded once, at the store: Eigen's own operators would round after every operation
// (sigmoid's 1 / (1 + exp(−x)) three times), which is neither PyTorch's nor Keras's result.
//
// Only declared here, so that headers such as gemm.h stay light: a file that instantiates a kernel
// on them includes <Eigen/Core>.
#pragma once

#include <type_traits>

namespace Eigen {
struct bfloat16;
struct half;
}  // namespace Eigen

namespace tandem::backend::cpu {

template <class T>
inline constexpr bool is_low_precision_v = std::is_same_v<T, Eigen::bfloat16> || std::is_same_v<T, Eigen::half>;

// The type a kernel on T computes and accumulates in: float for the 16-bit types, T otherwise.
template <class T>
using compute_t = std::conditional_t<is_low_precision_v<T>, float, T>;

// f applied in T's compute type, its result rounded once to R (R = T for the usual kernel).
template <class R, class F, class... Args>
R apply_rounded(const F& f, Args... args) {
  return static_cast<R>(f(static_cast<compute_t<Args>>(args)...));
}

}  // namespace tandem::backend::cpu
