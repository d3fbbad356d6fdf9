// Host tensors: the values users hand to fit/predict and get back from weights and predictions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace tandem {

// Stored as integers (graph attributes, saved plans): new dtypes are appended, never inserted.
enum class DType { F32, F64, I32, I64, BF16, F16 };

std::size_t dtype_size(DType t);
const char* dtype_name(DType t);  // Keras's names: "float32", ..., "bfloat16", "float16"

// The 16-bit floats a tensor can hold, as their bits (sign, exponent, mantissa; little-endian in
// memory like every dtype). bfloat16 is float32's upper half (8 exponent bits, 7 mantissa bits);
// float16 is IEEE 754 binary16 (5 and 10). Converting from float or double rounds once to the
// nearest value, ties to even; NaN stays NaN; float16 overflows to infinity past 65504 (values of
// 65520 and more). Converting to float is exact.
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float x);
  explicit bfloat16(double x);
  template <class I>
    requires std::is_integral_v<I>
  explicit bfloat16(I x) : bfloat16(static_cast<double>(x)) {}
  explicit operator float() const;
  static constexpr bfloat16 from_bits(uint16_t b) {
    bfloat16 v;
    v.bits = b;
    return v;
  }
};
struct float16 {
  uint16_t bits = 0;
  float16() = default;
  explicit float16(float x);
  explicit float16(double x);
  template <class I>
    requires std::is_integral_v<I>
  explicit float16(I x) : float16(static_cast<double>(x)) {}
  explicit operator float() const;
  static constexpr float16 from_bits(uint16_t b) {
    float16 v;
    v.bits = b;
    return v;
  }
};

// Dimensions of a tensor. -1 stands for the batch dimension before a batch size is chosen
// (printed as "None", like Keras).
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  // Dimension i; negative i counts from the end. ShapeError when i is outside [-rank, rank).
  int64_t operator[](int i) const { return dims_[checked_index(i)]; }
  int64_t& operator[](int i) { return dims_[checked_index(i)]; }
  int64_t back() const { return dims_.back(); }
  int64_t num_elements() const;  // product of dims; 1 for a scalar
  const std::vector<int64_t>& dims() const { return dims_; }
  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }

  Shape with_batch(int64_t batch) const;  // the same shape with a leading batch dimension
  Shape without_batch() const;            // drops the leading dimension
  std::string str() const;                // "(None, 28, 28)"

 private:
  std::size_t checked_index(int i) const;
  std::vector<int64_t> dims_;
};

struct TensorType {
  Shape shape{};
  DType dtype = DType::F32;
  std::size_t bytes() const { return static_cast<std::size_t>(shape.num_elements()) * dtype_size(dtype); }
  bool operator==(const TensorType& o) const { return shape == o.shape && dtype == o.dtype; }
};

// A dense row-major tensor in host memory. Copies share storage (like a NumPy view of the whole
// array); clone() makes an independent copy.
class Tensor {
 public:
  Tensor() = default;
  Tensor(Shape shape, DType dtype);  // zero-filled
  static Tensor from(Shape shape, std::span<const float> values);
  static Tensor from(Shape shape, std::span<const double> values);
  static Tensor from(Shape shape, std::span<const int32_t> values);
  static Tensor from(Shape shape, std::span<const int64_t> values);
  static Tensor from(Shape shape, std::span<const bfloat16> values);
  static Tensor from(Shape shape, std::span<const float16> values);

  const Shape& shape() const { return type_.shape; }
  DType dtype() const { return type_.dtype; }
  const TensorType& type() const { return type_; }
  int64_t size() const { return type_.shape.num_elements(); }
  std::size_t bytes() const { return type_.bytes(); }
  bool empty() const { return !storage_; }

  void* raw() { return storage_ ? storage_->data() : nullptr; }
  const void* raw() const { return storage_ ? storage_->data() : nullptr; }
  template <class T> T* data();              // checks that T matches dtype()
  template <class T> const T* data() const;
  template <class T> std::span<T> values() { return {data<T>(), static_cast<std::size_t>(size())}; }
  template <class T> std::span<const T> values() const { return {data<T>(), static_cast<std::size_t>(size())}; }

  double item(int64_t flat_index) const;  // any dtype, as double (exact but for int64 beyond 2^53)
  Tensor clone() const;
  // Converts each value. To a float dtype: rounds once to nearest, ties to even (float64 to a
  // 16-bit float is not rounded through float32). To an integer: truncates toward zero.
  Tensor cast(DType to) const;
  Tensor reshape(Shape shape) const;           // shares storage
  Tensor rows(int64_t begin, int64_t end) const;  // copy of rows [begin, end) of dim 0

 private:
  TensorType type_;
  std::shared_ptr<std::vector<std::byte>> storage_;
};

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::F32; }
template <> constexpr DType dtype_of<double>() { return DType::F64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::I32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::I64; }
template <> constexpr DType dtype_of<bfloat16>() { return DType::BF16; }
template <> constexpr DType dtype_of<float16>() { return DType::F16; }

}  // namespace tandem
