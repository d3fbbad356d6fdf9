// Symbolic ops on Symbols, the counterpart of keras.ops: what a custom layer's call, a custom loss
// or a functional model is written with. Every op has a gradient, so training needs nothing more.
//
// Inside a Layer's call (and a loss function) the symbols are the traced tensors of that call:
// their shapes include the batch, and a layer's weights are used directly (ops::matmul(x, kernel_)).
// On a model's symbols (from Input() or a layer), an op becomes a node of the functional model,
// like a layer without weights; such a model trains, but Model::save cannot store the op (wrap it
// in a custom layer for that).
//
// Binary ops broadcast like NumPy. Errors name the op, the layer and the shapes or dtypes.
#pragma once

#include <cstdint>
#include <vector>

#include "tandem/layer.h"

namespace tandem::ops {

// ---- arithmetic ----
Symbol add(const Symbol& a, const Symbol& b);
Symbol subtract(const Symbol& a, const Symbol& b);
Symbol multiply(const Symbol& a, const Symbol& b);
Symbol divide(const Symbol& a, const Symbol& b);
Symbol maximum(const Symbol& a, const Symbol& b);  // at a tie each side gets half the gradient, as in PyTorch
Symbol minimum(const Symbol& a, const Symbol& b);
Symbol negative(const Symbol& x);
// x + c, x * c, c - x, ... for a number c.
Symbol add(const Symbol& x, double c);
Symbol multiply(const Symbol& x, double c);
Symbol subtract(double c, const Symbol& x);
Symbol divide(double c, const Symbol& x);

// ---- elementwise ----
Symbol exp(const Symbol& x);
Symbol log(const Symbol& x);
Symbol sqrt(const Symbol& x);
Symbol square(const Symbol& x);
Symbol abs(const Symbol& x);    // gradient sign(x), 0 at 0
Symbol sign(const Symbol& x);   // -1, 0 or 1; no gradient flows through it
Symbol relu(const Symbol& x);
Symbol sigmoid(const Symbol& x);
Symbol tanh(const Symbol& x);
Symbol gelu(const Symbol& x, bool approximate = false);
Symbol softmax(const Symbol& x, int axis = -1);
Symbol log_softmax(const Symbol& x, int axis = -1);

// ---- comparisons and choices: 1 where true, 0 where false, in the operands' float dtype ----
Symbol greater(const Symbol& a, const Symbol& b);
Symbol greater_equal(const Symbol& a, const Symbol& b);
Symbol less(const Symbol& a, const Symbol& b);
Symbol less_equal(const Symbol& a, const Symbol& b);
Symbol equal(const Symbol& a, const Symbol& b);
Symbol not_equal(const Symbol& a, const Symbol& b);
Symbol where(const Symbol& condition, const Symbol& x, const Symbol& y);  // x where condition != 0, else y

// ---- linear algebra ----
// (…, m, k) · (k, n), or batched (…, m, k) · (…, k, n) with the same leading dimensions.
Symbol matmul(const Symbol& a, const Symbol& b);

// ---- reductions: over `axes` (all of them when empty) ----
Symbol sum(const Symbol& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
Symbol mean(const Symbol& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
Symbol max(const Symbol& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);  // ties share the gradient

// ---- shapes ----
// The whole shape, batch included; one dimension may be -1 (keras.ops.reshape).
Symbol reshape(const Symbol& x, const Shape& shape);
Symbol transpose(const Symbol& x, const std::vector<int64_t>& perm);
Symbol concatenate(const std::vector<Symbol>& xs, int64_t axis = -1);
// `size` elements of `axis` from `begin` on.
Symbol slice(const Symbol& x, int64_t axis, int64_t begin, int64_t size);
// Rows of `table` (n, …) picked by integer `ids`: shape ids + table's row shape (keras.ops.take, axis 0).
Symbol take(const Symbol& table, const Symbol& ids);
Symbol one_hot(const Symbol& ids, int64_t num_classes, DType dtype = DType::F32);
Symbol cast(const Symbol& x, DType dtype);
// x's shape and dtype, every element `value` (keras.ops.full_like); no gradient flows to x.
Symbol full_like(const Symbol& x, double value);

}  // namespace tandem::ops

namespace tandem {

inline Symbol operator+(const Symbol& a, const Symbol& b) { return ops::add(a, b); }
inline Symbol operator-(const Symbol& a, const Symbol& b) { return ops::subtract(a, b); }
inline Symbol operator*(const Symbol& a, const Symbol& b) { return ops::multiply(a, b); }
inline Symbol operator/(const Symbol& a, const Symbol& b) { return ops::divide(a, b); }
inline Symbol operator-(const Symbol& x) { return ops::negative(x); }
inline Symbol operator+(const Symbol& x, double c) { return ops::add(x, c); }
inline Symbol operator+(double c, const Symbol& x) { return ops::add(x, c); }
inline Symbol operator-(const Symbol& x, double c) { return ops::add(x, -c); }
inline Symbol operator-(double c, const Symbol& x) { return ops::subtract(c, x); }
inline Symbol operator*(const Symbol& x, double c) { return ops::multiply(x, c); }
inline Symbol operator*(double c, const Symbol& x) { return ops::multiply(x, c); }
inline Symbol operator/(const Symbol& x, double c) { return ops::multiply(x, 1.0 / c); }
inline Symbol operator/(double c, const Symbol& x) { return ops::divide(c, x); }

}  // namespace tandem
