// Graph-building functions: what layers, losses, optimizers and gradient rules call to emit ops.
#pragma once

#include <utility>
#include <vector>

#include "graph/op_registry.h"

namespace tandem::ops {

Value fill(Graph& g, const TensorType& type, double value);
Value scale(Graph& g, Value x, double factor);           // x * factor
Value cast(Graph& g, Value x, DType to);

Value matmul(Graph& g, Value a, Value b, bool transpose_a = false, bool transpose_b = false);
// The gradients (d a, d b) of matmul(a, b) for the output gradient dy (also fused_matmul's).
std::pair<Value, Value> matmul_gradients(Graph& g, Value a, Value b, Value dy, bool transpose_a, bool transpose_b);
Value bias_add(Graph& g, Value x, Value bias);           // bias along the last axis
Value add(Graph& g, Value a, Value b);                   // NumPy broadcasting
Value sub(Graph& g, Value a, Value b);
Value mul(Graph& g, Value a, Value b);
Value div(Graph& g, Value a, Value b);

// Elementwise math (ops/math.cpp).
Value exp(Graph& g, Value x);
Value log(Graph& g, Value x);
Value sqrt(Graph& g, Value x);
Value square(Graph& g, Value x);
Value abs(Graph& g, Value x);
Value sign(Graph& g, Value x);  // -1, 0 or 1; no gradient

// Comparisons and choices (ops/compare.cpp), broadcasting. `op` is one of greater, greater_equal,
// less, less_equal, equal_to, not_equal; the result is 1 or 0 in the operands' float dtype.
Value compare(Graph& g, const char* op, Value a, Value b);
Value maximum(Graph& g, Value a, Value b);
Value minimum(Graph& g, Value a, Value b);
Value where(Graph& g, Value cond, Value x, Value y);  // x where cond != 0, else y

// One-hot rows of integer class ids (ops/one_hot.cpp): shape ids + (depth,), `dtype` a float.
Value one_hot(Graph& g, Value ids, int64_t depth, DType dtype);

Value relu(Graph& g, Value x);
Value sigmoid(Graph& g, Value x);
Value tanh(Graph& g, Value x);
Value gelu(Graph& g, Value x, bool approximate = false);
Value softmax(Graph& g, Value x, int axis = -1);
Value log_softmax(Graph& g, Value x, int axis = -1);

Value reshape(Graph& g, Value x, Shape shape);    // full shape, batch included
Value reduce_sum(Graph& g, Value x, std::vector<int64_t> axes, bool keepdims = false);
// Gradient clipping (ops/gradient_clipping.cpp): min(max(x, -limit), limit); the sum of x² over
// every axis; x · limit / max(√sum_of_squares, limit).
Value clip_by_value(Graph& g, Value x, double limit);
Value sum_of_squares(Graph& g, Value x);
Value scale_by_norm(Graph& g, Value x, Value sum_of_squares, double limit);
// Dynamic loss scaling (ops/loss_scaling.cpp): (grad / scale, a float32 flag that is 1 when grad
// holds an inf or NaN), and the scale's update from the step's flag.
std::pair<Value, Value> unscale_gradient(Graph& g, Value grad, Value scale);
void loss_scale_update(Graph& g, Value scale, Value step_counter, Value nonfinite, int64_t dynamic_growth_steps);
Value reduce_mean(Graph& g, Value x, std::vector<int64_t> axes, bool keepdims = false);
Value reduce_max(Graph& g, Value x, std::vector<int64_t> axes, bool keepdims = false);
Value sum_to(Graph& g, Value x, Shape shape);      // undoes broadcasting: sums the broadcast axes
Value broadcast_to(Graph& g, Value x, Shape shape);

// Per-row losses, shape (batch,). `target` holds class ids (sparse) or a distribution.
Value cross_entropy(Graph& g, Value pred, Value target, bool sparse, bool from_logits);
Value binary_cross_entropy(Graph& g, Value pred, Value target, bool from_logits);
Value squared_error(Graph& g, Value pred, Value target);   // mean over the last axis
Value absolute_error(Graph& g, Value pred, Value target);  // mean over the last axis
Value huber(Graph& g, Value pred, Value target, double delta);  // mean over the last axis
Value log_cosh(Graph& g, Value pred, Value target);        // mean over the last axis
Value poisson(Graph& g, Value pred, Value target);         // mean over the last axis
Value kl_divergence(Graph& g, Value pred, Value target);   // sum over the last axis

// Inverted dropout whose mask depends only on (seed, step, global row index, column).
// The graph is one micro-batch of a step: micro-batch j's rows are j × x's rows on (the kernel
// adds that), a device's part of a split x its offset on (the lowering adds that).
Value dropout(Graph& g, Value x, Value step, double rate, uint64_t seed);
// The sum of v over the micro-batches of a step (ops/accumulate.cpp).
Value micro_sum(Graph& g, Value v);

// Metric counts (ops/metric_counts.cpp). confusion_counts: per threshold, the positives and the
// negatives predicted above it, then all positives and negatives, (2T + 2,), each element
// counting its `weight` where one is given (pred's shape); T = 1 uses `threshold`, T > 1 Keras's
// AUC thresholds. in_top_k: 1 where the target class is in the top k.
Value confusion_counts(Graph& g, Value pred, Value target, int64_t num_thresholds, double threshold = 0.5, Value weight = {});
Value in_top_k(Graph& g, Value pred, Value ids, int64_t k);

Value argmax(Graph& g, Value x, int axis = -1);           // int64
Value equal(Graph& g, Value a, Value b);                  // same dtype; float 1/0 of a's float kind

// Shape helpers shared by infer functions and kernels.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
int normalize_axis(int64_t axis, int rank, const char* op);
bool is_float(DType t);

}  // namespace tandem::ops
