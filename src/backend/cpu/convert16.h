// Bulk conversions between the 16-bit types and float32, vectorised (with AVX512-BF16 one
// instruction rounds 16 float32 values to bfloat16), and the chunked loop the 16-bit elementwise
// kernels share: each input's chunk widened into float32 on the stack, the float32 math, the
// chunk rounded once into the output. Per element that is apply_rounded's result (kernels run
// with denormals flushed, where the vector and scalar roundings agree); only the conversions
// run 16 at a time instead of one.
#pragma once

#include <Eigen/Core>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <bit>
#include <cstdint>
#include <utility>

#include "backend/cpu/low_precision.h"

namespace tandem::backend::cpu {

template <class From, class To>
void convert_n(const From* x, To* y, int64_t n) {
  Eigen::Map<Eigen::Array<To, Eigen::Dynamic, 1>>(y, n) = Eigen::Map<const Eigen::Array<From, Eigen::Dynamic, 1>>(x, n).template cast<To>();
}

// Eigen 3.4 vectorises float32 to bfloat16 (above) but converts the other ways one value at a
// time (about 0.3 ns a value for bfloat16, 0.9 for float16, where these take 0.05-0.07): a
// bfloat16 is the top half of a float32's bits, and F16C converts 8 float16 values at once, with
// the same rounding as Eigen's scalar conversion (which uses the same instruction).
inline void convert_n(const Eigen::bfloat16* x, float* y, int64_t n) {
  const auto* bits = reinterpret_cast<const uint16_t*>(x);
  for (int64_t i = 0; i < n; ++i) y[i] = std::bit_cast<float>(static_cast<uint32_t>(bits[i]) << 16);
}
inline void convert_n(const Eigen::half* x, float* y, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
#endif
  for (; i < n; ++i) y[i] = static_cast<float>(x[i]);
}
inline void convert_n(const float* x, Eigen::half* y, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
  for (; i < n; ++i) y[i] = static_cast<Eigen::half>(x[i]);
}

inline constexpr int64_t kConvertChunk = 512;  // values per chunk: a few float32 chunks stay in L1

// For a kernel written over float32 arrays, `f(out, m, in...)` (out[0, m) from in[0, m)): on T =
// float it runs on [begin, end) in place; on a 16-bit T on chunks widened into float32, each
// result rounded once into y.
template <class T, class F, class... In>
void map_float_blocks(int64_t begin, int64_t end, T* y, const F& f, const In*... x) {
  if constexpr (is_low_precision_v<T>) {
    alignas(64) float wide[sizeof...(In)][kConvertChunk];
    alignas(64) float result[kConvertChunk];
    for (int64_t c = begin; c < end; c += kConvertChunk) {
      const int64_t m = std::min(kConvertChunk, end - c);
      int slot = 0;
      ((convert_n(x + c, wide[slot], m), ++slot), ...);
      [&]<std::size_t... I>(std::index_sequence<I...>) { f(result, m, static_cast<const float*>(wide[I])...); }(std::index_sequence_for<In...>{});
      convert_n(result, y + c, m);
    }
  } else {
    f(y + begin, end - begin, (x + begin)...);
  }
}

// y[i] = f(x[i]...) for i in [begin, end), f applied to float32 values (T is a 16-bit type).
template <class T, class F, class... In>
void map_chunked(int64_t begin, int64_t end, T* y, const F& f, const In*... x) {
  static_assert(is_low_precision_v<T>);
  map_float_blocks(begin, end, y, [&](float* __restrict out, int64_t m, const auto*... in) {
    for (int64_t i = 0; i < m; ++i) out[i] = static_cast<float>(f(in[i]...));
  }, x...);
}

}  // namespace tandem::backend::cpu
