// The attributes the convolution ops share ("strides", "dilation", "padding") and the operand
// check they share, for conv2d.cpp and depthwise_conv2d.cpp.
#pragma once

#include <string>
#include <vector>

#include "ops/conv.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops::conv_detail {

inline Attrs conv_attrs(Pair strides, Pair dilation, const std::string& padding) {
  return {{"strides", std::vector<int64_t>{strides[0], strides[1]}},
          {"dilation", std::vector<int64_t>{dilation[0], dilation[1]}},
          {"padding", padding}};
}
inline Pair pair_attr(const Attrs& a, const char* key) {
  const std::vector<int64_t> v = a.ints(key);
  return {v[0], v[1]};
}
inline void check_float_pair(const char* op, const TensorType& a, const TensorType& b) {
  if (a.dtype != b.dtype || !is_float(a.dtype))
    throw ShapeError(std::string(op) + ": operands must share a float dtype, got " + dtype_name(a.dtype) + " and " +
                     dtype_name(b.dtype));
}
inline void check_dy(const char* op, const Shape& dy, const Shape& want) {
  if (dy != want)
    throw ShapeError(std::string(op) + ": expected an output gradient of shape " + want.str() + ", got " + dy.str());
}
inline Shape shape_attr(const Attrs& a, const char* key) { return Shape(a.ints(key)); }

}  // namespace tandem::ops::conv_detail
