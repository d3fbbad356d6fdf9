// fill, scale, cast and reshape on CUDA devices.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <limits>
#include <type_traits>

#include "backend/cuda/elementwise.cuh"

namespace tandem::backend::cuda {

namespace {
template <class T>
__global__ void fill_kernel(T* y, int64_t n, T value) {
  TANDEM_CUDA_LOOP(i, n) y[i] = value;
}

// The attr's double as T, rounded once (a 16-bit type straight from the double).
template <class T>
T fill_value(double v) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __double2bfloat16(v);
  else if constexpr (std::is_same_v<T, __half>) return __double2half(v);
  else return static_cast<T>(v);
}

template <class T>
KernelFn make_fill(const KernelInit& k) {
  T* y = out<T>(k);
  const int64_t n = numel(k.out_type());
  const T value = fill_value<T>(k.node.attrs.f("value"));
  return launch_over(k, n, [=](unsigned grid, cudaStream_t s) { fill_kernel<<<grid, kBlock, 0, s>>>(y, n, value); });
}

template <class T>
struct Scale {
  T factor;
  __device__ T operator()(T x) const { return x * factor; }
};
template <class T>
KernelFn make_scale(const KernelInit& k) { return map1<T>(k, Scale<T>{static_cast<T>(k.node.attrs.f("factor"))}); }

// x rounded to float "to odd" (truncated, the last bit set when inexact), as the CPU's
// round_to_odd_float: rounding that to 16 bits gives one correct rounding of x, where two
// nearest-even roundings (double -> float -> 16 bits) would not.
__device__ inline float round_to_odd_float(double x) {
  const float f = __double2float_rz(x);
  return static_cast<double>(f) == x ? f : __uint_as_float(__float_as_uint(f) | 1u);
}
template <class From>
__device__ inline float narrow_for_low_float(From x) {
  if constexpr (std::is_same_v<From, float>) return x;
  else return round_to_odd_float(static_cast<double>(x));
}

// A float that is NaN or outside the integer's range converts to the integer's minimum, as x86's
// conversions (cvttss2si and kin, the CPU backend's) give it; the GPU's own would saturate, and
// NaN would become 0. 16-bit floats convert exactly to float first, and into them every value
// rounds once to nearest-even, as on the CPU (a NaN's bits may differ from the CPU's NaN).
template <class Int>
constexpr Int kIntMin = std::numeric_limits<Int>::min();  // a host constant, which device code may read
template <class To>
struct ConvertTo {
  template <class From>
  __device__ To operator()(From x) const {
    if constexpr (std::is_same_v<From, To>) {
      return x;
    } else if constexpr (std::is_same_v<From, __nv_bfloat16>) {
      return (*this)(__bfloat162float(x));
    } else if constexpr (std::is_same_v<From, __half>) {
      return (*this)(__half2float(x));
    } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
      return __float2bfloat16_rn(narrow_for_low_float(x));
    } else if constexpr (std::is_same_v<To, __half>) {
      return __float2half_rn(narrow_for_low_float(x));
    } else {
      if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
        constexpr From bound = -From(kIntMin<To>);  // 2^31 or 2^63, exact in float and double
        if (!(x >= -bound && x < bound)) return kIntMin<To>;
      }
      return static_cast<To>(x);
    }
  }
};
template <class From, class To>
KernelFn cast_to(const KernelInit& k) { return map1<From, To>(k, ConvertTo<To>{}); }

template <class From>
KernelFn make_cast(const KernelInit& k) {
  switch (k.out_type().dtype) {
    case DType::F32: return cast_to<From, float>(k);
    case DType::F64: return cast_to<From, double>(k);
    case DType::I32: return cast_to<From, int32_t>(k);
    case DType::I64: return cast_to<From, int64_t>(k);
    case DType::BF16: return cast_to<From, __nv_bfloat16>(k);
    case DType::F16: return cast_to<From, __half>(k);
  }
  return {};
}

// The memory planner makes a reshape share its input's buffer; a copy is only needed when it could not.
KernelFn make_reshape(const KernelInit& k) {
  const void* x = k.in[0];
  void* y = k.out[0];
  const std::size_t bytes = k.out_type().bytes();
  if (x == y) return {};
  cudaStream_t s = stream(k);
  const std::string label = kernel_label(k);
  return [=] { CUDA_CHECK(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice, s), label); };
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("fill", make_fill);
REGISTER_CUDA_16BIT_KERNEL("fill", make_fill);
REGISTER_KERNEL("fill", DeviceKind::Cuda, DType::I64, make_fill<int64_t>);
REGISTER_KERNEL("fill", DeviceKind::Cuda, DType::I32, make_fill<int32_t>);
REGISTER_CUDA_FLOAT_KERNEL("scale", make_scale);
REGISTER_CUDA_FLOAT_KERNEL("cast", make_cast);
REGISTER_KERNEL("cast", DeviceKind::Cuda, DType::I32, make_cast<int32_t>);
REGISTER_KERNEL("cast", DeviceKind::Cuda, DType::I64, make_cast<int64_t>);
REGISTER_KERNEL("cast", DeviceKind::Cuda, DType::BF16, make_cast<__nv_bfloat16>);
REGISTER_KERNEL("cast", DeviceKind::Cuda, DType::F16, make_cast<__half>);
REGISTER_KERNEL("reshape", DeviceKind::Cuda, DType::F32, make_reshape);
REGISTER_KERNEL("reshape", DeviceKind::Cuda, DType::F64, make_reshape);
REGISTER_KERNEL("reshape", DeviceKind::Cuda, DType::I32, make_reshape);
REGISTER_KERNEL("reshape", DeviceKind::Cuda, DType::I64, make_reshape);
REGISTER_KERNEL("reshape", DeviceKind::Cuda, DType::BF16, make_reshape);
REGISTER_KERNEL("reshape", DeviceKind::Cuda, DType::F16, make_reshape);

}  // namespace tandem::backend::cuda
