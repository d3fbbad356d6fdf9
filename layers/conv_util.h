// Argument and input checks shared by the convolution, pooling and padding layers, so their errors
// read alike: `Conv2D "conv2d_1": expected input of rank 4 (batch, height, width, channels), got (None, 28, 28)`.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>

#include "tandem/errors.h"
#include "tandem/layers/conv.h"

namespace tandem::layers::detail {

inline std::string pair_str(int64_t a, int64_t b) {
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "(" + std::to_string(a).
  std::string s = "(";
  s += std::to_string(a);
  s += ", ";
  s += std::to_string(b);
  s += ")";
  return s;
}
inline std::string pair_str(const Int2& v) { return pair_str(v.h, v.w); }

// A shape as Keras prints it, batch dimension None.
inline std::string batch_str(const Shape& s) { return s.rank() == 0 ? s.str() : s.without_batch().with_batch(-1).str(); }

inline void check_positive(const std::string& owner, const char* arg, const Int2& v) {
  if (v.h <= 0 || v.w <= 0)
    throw ValueError(owner + ": " + arg + " must be positive integers, got " + pair_str(v));
}

// Keras accepts any case ("SAME") and stores the lower-case name.
inline std::string padding_mode(const std::string& owner, std::string padding) {
  std::transform(padding.begin(), padding.end(), padding.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (padding != "valid" && padding != "same")
    throw ValueError(owner + ": padding must be \"valid\" or \"same\", got \"" + padding + "\"");
  return padding;
}

// `x` includes the batch dimension.
inline void check_image(const std::string& owner, const Shape& x) {
  if (x.rank() != 4)
    throw ShapeError(owner + ": expected input of rank 4 (batch, height, width, channels), got " + batch_str(x));
}

// With "valid" padding a window must fit inside the image: (k − 1)·dilation + 1 <= size.
inline void check_window_fits(const std::string& owner, const char* what, const Int2& k, const Int2& dilation,
                              const std::string& padding, const Shape& x) {
  if (padding != "valid") return;
  const int64_t span_h = (k.h - 1) * dilation.h + 1, span_w = (k.w - 1) * dilation.w + 1;
  if (span_h > x[1] || span_w > x[2]) {
    std::string size = std::string(what) + " " + pair_str(k);
    if (dilation.h != 1 || dilation.w != 1) size += " with dilation_rate " + pair_str(dilation) + " spans " + pair_str(span_h, span_w) + " and";
    throw ShapeError(owner + ": " + size + " is larger than the input's height and width " + pair_str(x[1], x[2]) +
                     " with padding \"valid\"; input shape " + batch_str(x));
  }
}

}  // namespace tandem::layers::detail
