// What the 1-D convolution and pooling layers share: Keras's one-element tuples (kernel_size,
// strides, dilation_rate, pool_size are written [3] and read from 3 or [3]) as field-table
// entries, and the check of a (batch, steps, channels) input, so their errors read alike:
// `Conv1D "conv1d": expected input of rank 3 (batch, steps, channels), got (None, 20)`.
#pragma once

#include <cstdint>
#include <string>

#include "layers/conv_util.h"
#include "layers/fields.h"

namespace tandem::layers {

// An int64_t argument that Keras stores as a tuple of one integer. Written as [v]; read from v or
// [v]; absent or null keeps the struct's value unless `need`. `rule` (optional) checks it.
template <class Args, class Get, class Rule = std::nullptr_t>
Field<Args> int1(const char* key, Get get, Rule rule = nullptr, bool need = false) {
  Field<Args> f{key, [get](const Args& a) { return Json::array({get(a)}); },
                [get, key, need](const ConfigReader& c, Args& a) {
                  const Json* v = c.value(key);
                  if (!v || v->is_null()) {
                    if (need) c.fail(key, "an integer or a list of one integer (the key is missing)");
                    return;
                  }
                  if (v->is_number_integer()) get(a) = v->get<int64_t>();
                  else if (v->is_array() && v->size() == 1 && (*v)[0].is_number_integer()) get(a) = (*v)[0].get<int64_t>();
                  else c.fail(key, "an integer or a list of one integer");
                },
                nullptr};
  if constexpr (!std::is_same_v<Rule, std::nullptr_t>)
    f.check = [get, key, rule](const std::string& who, const Args& a) {
      const int64_t v = get(a);
      const std::string expected = rule(v);
      if (!expected.empty()) throw ValueError(who + ": " + key + " must be " + expected + ", got " + std::to_string(v));
    };
  return f;
}

namespace detail {

// `x` includes the batch dimension.
inline void check_sequence(const std::string& owner, const Shape& x) {
  if (x.rank() != 3) throw ShapeError(owner + ": expected input of rank 3 (batch, steps, channels), got " + batch_str(x));
}

// With "valid" padding a window must fit inside the sequence: (k − 1)·dilation + 1 <= steps.
inline void check_window_fits_1d(const std::string& owner, const char* what, int64_t k, int64_t dilation,
                                 const std::string& padding, const Shape& x) {
  if (padding != "valid") return;
  const int64_t span = (k - 1) * dilation + 1;
  if (span > x[1]) {
    std::string size = std::string(what) + " " + std::to_string(k);
    if (dilation != 1) size += " with dilation_rate " + std::to_string(dilation) + " spans " + std::to_string(span) + " and";
    throw ShapeError(owner + ": " + size + " is larger than the input's " + std::to_string(x[1]) +
                     " steps with padding \"valid\"; input shape " + batch_str(x));
  }
}

}  // namespace detail
}  // namespace tandem::layers
