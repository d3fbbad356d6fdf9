// Recurrent layers over sequences (batch, steps, features), with Keras 3's names, arguments,
// defaults and weights: LSTM, GRU, SimpleRNN and the Bidirectional wrapper.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tandem/layer.h"

namespace tandem::layers {

// The arguments of LSTM, GRU and SimpleRNN (Keras's, with its defaults). Those marked "LSTM" or
// "GRU" belong to that layer only; giving them to another is an error naming the argument.
struct RecurrentOptions {
  std::string activation = "tanh";               // "tanh", "sigmoid", "relu" or "linear"
  std::string recurrent_activation = "sigmoid";  // LSTM and GRU: the gates'
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer recurrent_initializer = "orthogonal";
  Initializer bias_initializer = "zeros";
  bool unit_forget_bias = true;  // LSTM: the forget gate's bias starts at 1
  bool reset_after = true;       // GRU: the reset gate applies after the recurrent product (two biases)
  Regularizer kernel_regularizer{};
  Regularizer recurrent_regularizer{};
  Regularizer bias_regularizer{};
  Regularizer activity_regularizer{};  // of the output (the first, with return_state), over the batch size
  Constraint kernel_constraint{};      // applied after each update
  Constraint recurrent_constraint{};
  Constraint bias_constraint{};
  // Dropout of the inputs and of the recurrent state during training, one mask per sequence (the
  // same at every step), as Keras draws them.
  double dropout = 0.0;
  double recurrent_dropout = 0.0;
  std::optional<uint64_t> seed;  // the dropout masks'; none: drawn from the global seed
  bool return_sequences = false;  // every step's output (batch, steps, units), else the last (batch, units)
  bool return_state = false;      // also the final states: .outputs(x) gives {output, h} (LSTM: {output, h, c})
  bool go_backwards = false;      // run from the last step to the first; sequences come out in that order
  std::string name{};
};

// Long short-term memory: kernel (features, 4·units), recurrent_kernel (units, 4·units),
// bias (4·units), gates (i, f, c, o). Called on x, or on {x, h0, c0} to give initial states.
LayerRef LSTM(int64_t units, const RecurrentOptions& options = {});
// Gated recurrent unit: kernel (features, 3·units), recurrent_kernel (units, 3·units), bias
// (2, 3·units) with reset_after (input and recurrent biases), else (3·units); gates (z, r, h).
// Called on x or on {x, h0}.
LayerRef GRU(int64_t units, const RecurrentOptions& options = {});
// h_t = activation(x_t·kernel + h_{t−1}·recurrent_kernel + bias). Called on x or on {x, h0}.
LayerRef SimpleRNN(int64_t units, const RecurrentOptions& options = {});

struct BidirectionalOptions {
  // How the two directions' outputs combine: "concat" (the last axis), "sum", "mul", "ave", or
  // "" (Keras's None: .outputs(x) gives both).
  std::string merge_mode = "concat";
  std::string name{};
};
// Runs `layer` (an LSTM, GRU or SimpleRNN, not yet called) forwards and a copy of it backwards over
// the sequence, and merges the two; the backward sequence is put back in time order. The copies
// are named "forward_<name>" and "backward_<name>", as Keras names them.
LayerRef Bidirectional(const LayerRef& layer, const BidirectionalOptions& options = {});

}  // namespace tandem::layers
