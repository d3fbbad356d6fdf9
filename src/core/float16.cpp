// Conversions of the public 16-bit float types (see convert in core/float16.h).
#include "core/float16.h"

namespace tandem {

bfloat16::bfloat16(float x) : bits(convert<bfloat16>(x).bits) {}
bfloat16::bfloat16(double x) : bits(convert<bfloat16>(x).bits) {}
bfloat16::operator float() const { return convert<float>(*this); }

float16::float16(float x) : bits(convert<float16>(x).bits) {}
float16::float16(double x) : bits(convert<float16>(x).bits) {}
float16::operator float() const { return convert<float>(*this); }

namespace {
template <class F>
void with_type(DType t, F&& f) {
  switch (t) {
    case DType::F32: return f(float{});
    case DType::F64: return f(double{});
    case DType::I32: return f(int32_t{});
    case DType::I64: return f(int64_t{});
    case DType::BF16: return f(bfloat16{});
    case DType::F16: return f(float16{});
  }
}
}  // namespace

void convert_values(const void* in, DType from, void* out, DType to, std::size_t n) {
  with_type(from, [&](auto f) {
    with_type(to, [&](auto t) {
      using From = decltype(f);
      using To = decltype(t);
      const From* x = static_cast<const From*>(in);
      To* y = static_cast<To*>(out);
      for (std::size_t i = 0; i < n; ++i) y[i] = convert<To>(x[i]);
    });
  });
}

}  // namespace tandem
