#include "tandem/tensor.h"

#include <cstring>

#include "core/float16.h"
#include "tandem/errors.h"

namespace tandem {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F64: return 8;
    case DType::I32: return 4;
    case DType::I64: return 8;
    case DType::BF16: return 2;
    case DType::F16: return 2;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "float32";
    case DType::F64: return "float64";
    case DType::I32: return "int32";
    case DType::I64: return "int64";
    case DType::BF16: return "bfloat16";
    case DType::F16: return "float16";
  }
  return "?";
}

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

std::size_t Shape::checked_index(int i) const {
  if (i < -rank() || i >= rank())
    throw ShapeError("Shape " + str() + ": index " + std::to_string(i) + " is outside [" + std::to_string(-rank()) + ", " +
                     std::to_string(rank()) + ") for rank " + std::to_string(rank()));
  return static_cast<std::size_t>(i < 0 ? i + rank() : i);
}

Shape Shape::with_batch(int64_t batch) const {
  std::vector<int64_t> d{batch};
  d.insert(d.end(), dims_.begin(), dims_.end());
  return Shape(std::move(d));
}

Shape Shape::without_batch() const {
  if (dims_.empty()) return {};
  return Shape(std::vector<int64_t>(dims_.begin() + 1, dims_.end()));
}

std::string Shape::str() const {
  std::string s = "(";
  for (std::size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ", ";
    s += dims_[i] < 0 ? "None" : std::to_string(dims_[i]);
  }
  if (dims_.size() == 1) s += ",";
  return s + ")";
}

namespace {
// Checked before any allocation: a negative dimension would otherwise ask for ~2^64 bytes.
Shape non_negative(Shape shape) {
  for (std::size_t i = 0; i < shape.dims().size(); ++i)
    if (shape.dims()[i] < 0)
      throw ShapeError("Tensor: dimensions must be non-negative, got " + std::to_string(shape.dims()[i]) + " at axis " +
                       std::to_string(i) + " (-1 means the batch dimension only in a model's symbolic shapes)");
  return shape;
}
}  // namespace

Tensor::Tensor(Shape shape, DType dtype)
    : type_{non_negative(std::move(shape)), dtype},
      storage_(std::make_shared<std::vector<std::byte>>(type_.bytes())) {}

namespace {
template <class T>
Tensor make_from(Shape shape, std::span<const T> values) {
  Tensor t(std::move(shape), dtype_of<T>());
  if (static_cast<int64_t>(values.size()) != t.size())
    throw ShapeError("Tensor::from: shape " + t.shape().str() + " holds " + std::to_string(t.size()) +
                     " values, got " + std::to_string(values.size()));
  if (!values.empty()) std::memcpy(t.raw(), values.data(), t.bytes());
  return t;
}

}  // namespace

Tensor Tensor::from(Shape s, std::span<const float> v) { return make_from(std::move(s), v); }
Tensor Tensor::from(Shape s, std::span<const double> v) { return make_from(std::move(s), v); }
Tensor Tensor::from(Shape s, std::span<const int32_t> v) { return make_from(std::move(s), v); }
Tensor Tensor::from(Shape s, std::span<const int64_t> v) { return make_from(std::move(s), v); }
Tensor Tensor::from(Shape s, std::span<const bfloat16> v) { return make_from(std::move(s), v); }
Tensor Tensor::from(Shape s, std::span<const float16> v) { return make_from(std::move(s), v); }

template <class T>
T* Tensor::data() {
  if (dtype_of<T>() != dtype())
    throw ValueError(std::string("Tensor::data: tensor holds ") + dtype_name(dtype()) + ", asked for " +
                     dtype_name(dtype_of<T>()));
  return static_cast<T*>(raw());
}
template <class T>
const T* Tensor::data() const {
  return const_cast<Tensor*>(this)->data<T>();
}
template float* Tensor::data<float>();
template double* Tensor::data<double>();
template int32_t* Tensor::data<int32_t>();
template int64_t* Tensor::data<int64_t>();
template bfloat16* Tensor::data<bfloat16>();
template float16* Tensor::data<float16>();
template const float* Tensor::data<float>() const;
template const double* Tensor::data<double>() const;
template const int32_t* Tensor::data<int32_t>() const;
template const int64_t* Tensor::data<int64_t>() const;
template const bfloat16* Tensor::data<bfloat16>() const;
template const float16* Tensor::data<float16>() const;

double Tensor::item(int64_t i) const {
  if (i < 0 || i >= size())
    throw ValueError("Tensor::item: index " + std::to_string(i) + " outside [0, " + std::to_string(size()) + ")");
  switch (dtype()) {
    case DType::F32: return static_cast<const float*>(raw())[i];
    case DType::F64: return static_cast<const double*>(raw())[i];
    case DType::I32: return static_cast<const int32_t*>(raw())[i];
    case DType::I64: return static_cast<double>(static_cast<const int64_t*>(raw())[i]);
    case DType::BF16: return static_cast<float>(static_cast<const bfloat16*>(raw())[i]);
    case DType::F16: return static_cast<float>(static_cast<const float16*>(raw())[i]);
  }
  return 0;
}

Tensor Tensor::clone() const {
  Tensor t(shape(), dtype());
  if (bytes()) std::memcpy(t.raw(), raw(), bytes());
  return t;
}

Tensor Tensor::cast(DType to) const {
  if (to == dtype()) return clone();
  Tensor t(shape(), to);
  convert_values(raw(), dtype(), t.raw(), to, static_cast<std::size_t>(size()));
  return t;
}

Tensor Tensor::reshape(Shape s) const {
  if (s.num_elements() != size())
    throw ShapeError("Tensor::reshape: cannot view " + shape().str() + " as " + s.str());
  Tensor t = *this;
  t.type_.shape = std::move(s);
  return t;
}

Tensor Tensor::rows(int64_t begin, int64_t end) const {
  if (shape().rank() == 0 || begin < 0 || end > shape()[0] || begin > end)
    throw ValueError("Tensor::rows: range [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") outside a tensor of shape " + shape().str());
  Shape s = shape();
  s[0] = end - begin;
  Tensor t(s, dtype());
  const std::size_t row = shape()[0] ? bytes() / static_cast<std::size_t>(shape()[0]) : 0;
  if (t.bytes()) std::memcpy(t.raw(), static_cast<const std::byte*>(raw()) + row * static_cast<std::size_t>(begin), t.bytes());
  return t;
}

}  // namespace tandem
