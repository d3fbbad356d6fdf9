// The row maps tandem/data.h offers: one_hot and cast.
#include <cstring>

#include "tandem/data.h"
#include "tandem/errors.h"

namespace tandem::datasets {

namespace {
double read(const std::byte* p, DType t) {
  switch (t) {
    case DType::F32: { float v; std::memcpy(&v, p, sizeof v); return v; }
    case DType::F64: { double v; std::memcpy(&v, p, sizeof v); return v; }
    case DType::I32: { int32_t v; std::memcpy(&v, p, sizeof v); return v; }
    case DType::I64: { int64_t v; std::memcpy(&v, p, sizeof v); return static_cast<double>(v); }
    case DType::BF16: { bfloat16 v; std::memcpy(&v, p, sizeof v); return static_cast<float>(v); }
    case DType::F16: { float16 v; std::memcpy(&v, p, sizeof v); return static_cast<float>(v); }
  }
  return 0;
}

void write(std::byte* p, DType t, double v) {
  switch (t) {
    case DType::F32: { const auto x = static_cast<float>(v); std::memcpy(p, &x, sizeof x); return; }
    case DType::F64: std::memcpy(p, &v, sizeof v); return;
    case DType::I32: { const auto x = static_cast<int32_t>(v); std::memcpy(p, &x, sizeof x); return; }
    case DType::I64: { const auto x = static_cast<int64_t>(v); std::memcpy(p, &x, sizeof x); return; }
    case DType::BF16: { const bfloat16 x(v); std::memcpy(p, &x, sizeof x); return; }
    case DType::F16: { const float16 x(v); std::memcpy(p, &x, sizeof x); return; }
  }
}
}  // namespace

RowMapper one_hot(int64_t num_classes, DType dtype) {
  if (num_classes < 1) throw ValueError("datasets::one_hot: num_classes must be >= 1, got " + std::to_string(num_classes));
  if (dtype != DType::F32 && dtype != DType::F64) throw ValueError(std::string("datasets::one_hot: dtype must be a float, got ") + dtype_name(dtype));
  return [num_classes, dtype](const TensorType& in) {
    if (in.shape.num_elements() != 1)
      throw ShapeError("datasets::one_hot: expected one class id per row (shape () or (1,)), got rows of shape " + in.shape.str());
    const std::size_t size = dtype_size(dtype);
    return RowMap{{Shape{num_classes}, dtype}, [num_classes, dtype, size, from = in.dtype](const std::byte* src, std::byte* out) {
                    std::memset(out, 0, size * static_cast<std::size_t>(num_classes));
                    const double id = read(src, from);
                    if (id >= 0 && id < double(num_classes)) write(out + size * static_cast<std::size_t>(id), dtype, 1.0);
                  }};
  };
}

RowMapper cast(DType dtype) {
  return [dtype](const TensorType& in) {
    const auto n = static_cast<std::size_t>(in.shape.num_elements());
    const std::size_t from_size = dtype_size(in.dtype), to_size = dtype_size(dtype);
    return RowMap{{in.shape, dtype}, [n, from = in.dtype, dtype, from_size, to_size](const std::byte* src, std::byte* out) {
                    for (std::size_t i = 0; i < n; ++i) write(out + i * to_size, dtype, read(src + i * from_size, from));
                  }};
  };
}

}  // namespace tandem::datasets
