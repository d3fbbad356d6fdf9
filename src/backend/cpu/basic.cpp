// fill, scale, cast and reshape.
#include <cstring>

#include "backend/cpu/convert16.h"
#include "backend/cpu/kernel_util.h"
#include "core/float16.h"

namespace tandem::backend::cpu {

namespace {
// The attr's double as T, rounded once (a 16-bit type through convert's round-to-odd float).
template <class T>
T fill_value(double v) {
  if constexpr (is_low_precision_v<T>) {
    using Same = std::conditional_t<std::is_same_v<T, Eigen::bfloat16>, bfloat16, float16>;
    return to_eigen(convert<Same>(v));
  } else {
    return static_cast<T>(v);
  }
}

template <class T>
KernelFn make_fill(const KernelInit& k) {
  T* y = out<T>(k);
  const int64_t n = numel(k.out_type());
  const T v = fill_value<T>(k.node.attrs.f("value"));
  return [=] { std::fill(y, y + n, v); };
}

template <class T>
KernelFn make_scale(const KernelInit& k) {
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  const int64_t n = numel(k.out_type());
  const T f = static_cast<T>(k.node.attrs.f("factor"));
  Context* ctx = &context(k);
  return [=] { ctx->parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) { for (int64_t i = b; i < e; ++i) y[i] = x[i] * f; }); };
}

// Eigen's own type for each of the 16-bit types (the same bits), for its vectorised conversions.
template <class T> struct EigenType { using type = T; };
template <> struct EigenType<bfloat16> { using type = Eigen::bfloat16; };
template <> struct EigenType<float16> { using type = Eigen::half; };
template <class T> auto* eigen_pointer(T* p) { return reinterpret_cast<typename EigenType<std::remove_const_t<T>>::type*>(p); }
template <class T> const auto* eigen_pointer(const T* p) { return reinterpret_cast<const typename EigenType<T>::type*>(p); }

template <class From, class To>
KernelFn cast_loop(const KernelInit& k) {
  const From* x = in<From>(k, 0);
  To* y = out<To>(k);
  const int64_t n = numel(k.out_type());
  Context* ctx = &context(k);
  // float32 to and from the 16-bit types, every step of a mixed-precision model: 16 at a time.
  constexpr bool vectorised = (std::is_same_v<From, float> && is_low_float<To>) || (is_low_float<From> && std::is_same_v<To, float>);
  return [=] {
    ctx->parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) {
      if constexpr (vectorised) convert_n(eigen_pointer(x + b), eigen_pointer(y + b), e - b);
      else for (int64_t i = b; i < e; ++i) y[i] = convert<To>(x[i]);
    });
  };
}

template <class From>
KernelFn make_cast(const KernelInit& k) {
  switch (k.out_type().dtype) {
    case DType::F32: return cast_loop<From, float>(k);
    case DType::F64: return cast_loop<From, double>(k);
    case DType::I32: return cast_loop<From, int32_t>(k);
    case DType::I64: return cast_loop<From, int64_t>(k);
    case DType::BF16: return cast_loop<From, bfloat16>(k);
    case DType::F16: return cast_loop<From, float16>(k);
  }
  return {};
}

// The memory planner makes a reshape share its input's buffer; a copy is only needed when it could not.
KernelFn make_reshape(const KernelInit& k) {
  const void* x = k.in[0];
  void* y = k.out[0];
  const std::size_t bytes = k.out_type().bytes();
  if (x == y) return {};
  return [=] { std::memcpy(y, x, bytes); };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("fill", make_fill);
REGISTER_CPU_16BIT_KERNEL("fill", make_fill);
REGISTER_KERNEL("fill", DeviceKind::Cpu, DType::I64, make_fill<int64_t>);
REGISTER_KERNEL("fill", DeviceKind::Cpu, DType::I32, make_fill<int32_t>);
REGISTER_CPU_FLOAT_KERNEL("scale", make_scale);
REGISTER_CPU_FLOAT_KERNEL("cast", make_cast);
REGISTER_KERNEL("cast", DeviceKind::Cpu, DType::I32, make_cast<int32_t>);
REGISTER_KERNEL("cast", DeviceKind::Cpu, DType::I64, make_cast<int64_t>);
REGISTER_KERNEL("cast", DeviceKind::Cpu, DType::BF16, make_cast<bfloat16>);
REGISTER_KERNEL("cast", DeviceKind::Cpu, DType::F16, make_cast<float16>);
REGISTER_KERNEL("reshape", DeviceKind::Cpu, DType::F32, make_reshape);
REGISTER_KERNEL("reshape", DeviceKind::Cpu, DType::F64, make_reshape);
REGISTER_KERNEL("reshape", DeviceKind::Cpu, DType::I32, make_reshape);
REGISTER_KERNEL("reshape", DeviceKind::Cpu, DType::I64, make_reshape);
REGISTER_KERNEL("reshape", DeviceKind::Cpu, DType::BF16, make_reshape);
REGISTER_KERNEL("reshape", DeviceKind::Cpu, DType::F16, make_reshape);

}  // namespace tandem::backend::cpu
