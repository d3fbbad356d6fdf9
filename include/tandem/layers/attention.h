// Embeddings, merging layers and attention, with Keras 3's names, arguments, defaults and weights.
#pragma once

#include <string>

#include "tandem/layer.h"

namespace tandem::layers {

struct EmbeddingOptions {
  Initializer embeddings_initializer = "uniform";  // RandomUniform(−0.05, 0.05), as Keras
  // Id 0 is padding: the output carries a mask (batch, steps) that is 0 where the id is 0, which
  // layers after it respect (GlobalAveragePooling1D, MultiHeadAttention, recurrent layers, the
  // loss); docs/custom-layers.md, "Masks".
  bool mask_zero = false;
  Regularizer embeddings_regularizer{};
  Regularizer activity_regularizer{};  // of the output, divided by the batch size
  Constraint embeddings_constraint{};  // applied after each update
  std::string name{};
};
// Maps integer ids (any shape) to rows of the weight `embeddings` (input_dim, output_dim): output
// shape ids.shape + (output_dim). Float ids are truncated to int32 first, as Keras does. An id
// outside [0, input_dim) makes fit/evaluate/predict (or any step) throw tandem::ValueError naming
// the layer, the id and its position in the batch; nothing is clamped.
LayerRef Embedding(int64_t input_dim, int64_t output_dim, const EmbeddingOptions& options = {});

// Marks as padding the steps of x (batch, steps, features) whose features all equal mask_value:
// those steps come out as zeros, and the output carries a mask (batch, steps) of the others, as
// Keras's Masking does.
LayerRef Masking(double mask_value = 0.0, const std::string& name = "");

// Elementwise sum / product of a list of inputs (at least one) of one dtype whose shapes broadcast
// (NumPy rules, like Keras's merge layers): called as Add()({a, b}).
LayerRef Add(const std::string& name = "");
LayerRef Multiply(const std::string& name = "");
// Keras's other merges, under the same rules: Subtract takes exactly two inputs (a − b); Average is
// their mean; Maximum and Minimum the elementwise max / min (a masked step of one input is taken
// from the other, as Keras does).
LayerRef Subtract(const std::string& name = "");
LayerRef Average(const std::string& name = "");
LayerRef Maximum(const std::string& name = "");
LayerRef Minimum(const std::string& name = "");

struct DotOptions {
  bool normalize = false;  // L2-normalise both inputs along their axes first: cosine similarity
  std::string name{};
};
// Keras's Dot on two inputs a (batch, ...) and b (batch, ...): the sum of a·b over axes[0] of a and
// axes[1] of b (one number: the same axis of both), counting the batch axis as 0 (the batch axis
// itself cannot be reduced) and negative from the end. The output keeps a's other axes, then b's,
// as Keras's batch_dot; (batch, 1) when both inputs are (batch, n).
LayerRef Dot(std::vector<int64_t> axes, const DotOptions& options = {});

struct ConcatenateOptions {
  int64_t axis = -1;  // counts the batch axis, like Keras; the batch axis itself cannot be joined
  std::string name{};
};
// Joins a list of inputs along `axis`; every other dimension must match.
LayerRef Concatenate(const ConcatenateOptions& options = {});

struct MultiHeadAttentionOptions {
  int64_t value_dim = 0;     // per-head size of the value projection; 0 means key_dim
  double dropout = 0.0;      // on the attention probabilities, during training only
  bool use_bias = true;
  Shape output_shape{};       // per-position output shape; empty means the query's last dimension
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  // As Keras, each applies to every projection (query, key, value, attention_output): its kernel
  // and bias, and the activity regularizer to each projection's output (divided by the batch
  // size), not to the layer's output.
  Regularizer kernel_regularizer{};
  Regularizer bias_regularizer{};
  Regularizer activity_regularizer{};
  Constraint kernel_constraint{};  // applied after each update
  Constraint bias_constraint{};
  // Keras takes use_causal_mask as a call argument; here it is fixed when the layer is made. As in
  // Keras, query i attends to keys j <= i (the mask is aligned at the first position).
  bool use_causal_mask = false;
  std::string name{};
};
// Keras 3's MultiHeadAttention on rank-3 inputs, called as mha({query, value}),
// mha({query, value, key}) or mha({query, value, key, attention_mask}) with query (batch, T, dq),
// value (batch, S, dv), key (batch, S, dk) (key defaults to value: pass value again) and
// attention_mask (batch, T, S), non-zero where a query may attend to a key (Keras's
// `attention_mask=`; combined with the inputs' masks and use_causal_mask). Weights, in Keras's order and shapes:
//   query/kernel (dq, num_heads, key_dim), query/bias (num_heads, key_dim),
//   key/kernel (dk, num_heads, key_dim), key/bias (num_heads, key_dim),
//   value/kernel (dv, num_heads, value_dim), value/bias (num_heads, value_dim),
//   attention_output/kernel (num_heads, value_dim, *output_shape), attention_output/bias (output_shape)
// (no biases when use_bias is false). Scores are q·kᵀ with q scaled by 1/sqrt(key_dim); the output
// is (batch, T, *output_shape). Not supported: attention_axes (attention runs over axis 1),
// return_attention_scores.
LayerRef MultiHeadAttention(int64_t num_heads, int64_t key_dim, const MultiHeadAttentionOptions& options = {});

struct PositionEmbeddingOptions {
  Initializer initializer = "glorot_uniform";
  std::string name{};
};
// keras_hub's PositionEmbedding: a learned weight `embeddings` (sequence_length, features). Called
// on x (batch, ..., T, features) with T <= sequence_length, it returns the first T rows broadcast to
// x's shape. Like keras_hub it does not add them to x: write Add()({x, PositionEmbedding(T)(x)}).
LayerRef PositionEmbedding(int64_t sequence_length, const PositionEmbeddingOptions& options = {});

}  // namespace tandem::layers
