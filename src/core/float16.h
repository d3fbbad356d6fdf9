// The 16-bit float types of tandem/tensor.h as Eigen's bfloat16 and half, for code under src/ that
// computes with them (Eigen is kept out of the public headers). Both pairs are a lone uint16_t, so
// buffers of one may be read as the other.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "tandem/tensor.h"

namespace tandem {

static_assert(sizeof(bfloat16) == 2 && sizeof(Eigen::bfloat16) == 2, "bfloat16 is two bytes");
static_assert(sizeof(float16) == 2 && sizeof(Eigen::half) == 2, "float16 is two bytes");

inline Eigen::bfloat16 to_eigen(bfloat16 x) { return Eigen::numext::bit_cast<Eigen::bfloat16>(x.bits); }
inline Eigen::half to_eigen(float16 x) { return Eigen::numext::bit_cast<Eigen::half>(x.bits); }
inline bfloat16 from_eigen(Eigen::bfloat16 x) { return bfloat16::from_bits(Eigen::numext::bit_cast<uint16_t>(x)); }
inline float16 from_eigen(Eigen::half x) { return float16::from_bits(Eigen::numext::bit_cast<uint16_t>(x)); }

// x rounded to float "to odd": truncated toward zero, with the last mantissa bit set when that lost
// anything. Rounding this float to nearest-even in a type of at most 22 mantissa bits (bfloat16 has
// 7, float16 10) gives the same value as rounding x itself once, which double -> float -> 16 bits
// through two nearest-even roundings does not (a double just above a tie would land on it).
inline float round_to_odd_float(double x) {
  float f = static_cast<float>(x);
  if (std::isnan(x) || static_cast<double>(f) == x) return f;  // NaN, or exact (infinities included)
  if (std::abs(static_cast<double>(f)) > std::abs(x)) f = std::nextafter(f, 0.0f);  // overflow to inf lands on FLT_MAX
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  b |= 1u;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

template <class T>
constexpr bool is_low_float = std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>;

// Converts one value between any two tensor element types, as Tensor::cast and the CPU's cast
// kernel do: to a 16-bit float, rounded once to nearest-even (from float directly, from anything
// else through round_to_odd_float); from one, exactly to float first; between the others, C++'s
// conversion.
template <class To, class From>
inline To convert(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (is_low_float<From>) {
    return convert<To>(static_cast<float>(to_eigen(x)));
  } else if constexpr (std::is_same_v<To, bfloat16>) {
    if constexpr (std::is_same_v<From, float>) return from_eigen(Eigen::bfloat16(x));
    else return from_eigen(Eigen::bfloat16(round_to_odd_float(static_cast<double>(x))));
  } else if constexpr (std::is_same_v<To, float16>) {
    if constexpr (std::is_same_v<From, float>) return from_eigen(Eigen::half(x));
    else return from_eigen(Eigen::half(round_to_odd_float(static_cast<double>(x))));
  } else {
    return static_cast<To>(x);
  }
}

// Converts n values of dtype `from` at `in` to dtype `to` at `out` with convert (the buffers must
// not overlap unless the dtypes are equal).
void convert_values(const void* in, DType from, void* out, DType to, std::size_t n);

}  // namespace tandem
