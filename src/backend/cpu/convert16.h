// Bulk conversions between the 16-bit types and float32, vectorised (Eigen's packet casts: with
// AVX512-BF16 one instruction converts 16 values), and the chunked loop the 16-bit elementwise
// kernels share: each input's chunk widened into float32 on the stack, the float32 math, the
// chunk rounded once into the output. Per element that is apply_rounded's result (kernels run
// with denormals flushed, where the vector and scalar roundings agree); only the conversions
// run 16 at a time instead of one.
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>

#include "backend/cpu/low_precision.h"

namespace tandem::backend::cpu {

template <class From, class To>
void convert_n(const From* x, To* y, int64_t n) {
  Eigen::Map<Eigen::Array<To, Eigen::Dynamic, 1>>(y, n) = Eigen::Map<const Eigen::Array<From, Eigen::Dynamic, 1>>(x, n).template cast<To>();
}

inline constexpr int64_t kConvertChunk = 512;  // values per chunk: a few float32 chunks stay in L1

namespace detail {
template <class T, class F, class Inputs, std::size_t... I>
void map_chunked(int64_t begin, int64_t end, T* y, const F& f, const Inputs& x, std::index_sequence<I...>) {
  alignas(64) float wide[sizeof...(I)][kConvertChunk];
  alignas(64) float result[kConvertChunk];
  for (int64_t c = begin; c < end; c += kConvertChunk) {
    const int64_t m = std::min(kConvertChunk, end - c);
    (convert_n(std::get<I>(x) + c, wide[I], m), ...);
    for (int64_t i = 0; i < m; ++i) result[i] = static_cast<float>(f(wide[I][i]...));
    convert_n(result, y + c, m);
  }
}
}  // namespace detail

// y[i] = f(x[i]...) for i in [begin, end), f applied to float32 values (T is a 16-bit type).
template <class T, class F, class... In>
void map_chunked(int64_t begin, int64_t end, T* y, const F& f, const In*... x) {
  detail::map_chunked(begin, end, y, f, std::make_tuple(x...), std::index_sequence_for<In...>{});
}

}  // namespace tandem::backend::cpu
