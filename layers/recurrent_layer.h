// What LSTM, GRU and SimpleRNN share (layers/lstm.cpp, gru.cpp, simple_rnn.cpp), and what
// Bidirectional calls them through. Each layer computes the input projection x·kernel + bias for
// every step at once (one big matmul), then one recurrent op over the whole sequence
// (ops/recurrent.h). Keras's arguments, defaults and config keys are one field table per layer,
// built from the shared fields below.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "layers/config.h"
#include "layers/fields.h"
#include "ops/recurrent.h"
#include "tandem/layers/recurrent.h"

namespace tandem::layers {

struct RecurrentArgs {
  int64_t units = 0;
  RecurrentOptions options;
  bool zero_output_for_mask = false;  // Keras's RNN argument; Bidirectional sets it to return_sequences
  bool unroll = false;                // accepted and written; the op is the same either way
};

// The fields every recurrent layer has: the RNN wrapper's, units, activation, use_bias and the
// initializers, then `cell` (the layer's own), then the dropouts and the seed (which Keras's
// SimpleRNN reads but does not write).
std::vector<Field<RecurrentArgs>> recurrent_fields(std::vector<Field<RecurrentArgs>> cell, bool writes_seed = true);

class RecurrentLayer : public Layer {
 public:
  // One direction's results: the output sequence in processing order (batch, steps, units) and the
  // final states (h, and c for LSTM).
  struct Run {
    graph::Value sequence;
    std::vector<graph::Value> states;
  };

  std::string config_json() const override;
  void build(const std::vector<Shape>& in) override;
  // Every output of a call: the sequence or the last output, then the final states with
  // return_state. The call's inputs are the sequence, then optional initial states (Keras's
  // initial_state keyword); a mask on the sequence makes masked steps carry the states over.
  std::vector<graph::Value> emit_outputs(CallContext& ctx, const std::vector<graph::Value>& inputs) override;
  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override { return emit_outputs(ctx, inputs).at(0); }
  CallKeywordInputs keyword_inputs() const override { return {1, "initial_state"}; }
  // As Keras: the sequence output keeps the input's mask; the last output and the states have none.
  std::vector<graph::Value> emit_output_masks(CallContext& ctx, const std::vector<graph::Value>& inputs,
                                              const std::vector<graph::Value>& outputs) override;

  // Runs the sequence x (batch, steps, features) from `initial` states (empty: zeros); `mask`
  // (batch, steps), or invalid for none.
  Run run(CallContext& ctx, graph::Value x, const std::vector<graph::Value>& initial, graph::Value mask);
  int state_count() const { return gates() == 4 ? 2 : 1; }
  const RecurrentArgs& args() const { return args_; }
  // A new, unbuilt layer with these arguments, of this layer's class.
  virtual std::shared_ptr<RecurrentLayer> with_args(RecurrentArgs args) const = 0;

 protected:
  RecurrentLayer(const char* prefix, RecurrentArgs args, const Fields<RecurrentArgs>& fields);
  // Checks the arguments against the field table and the kernels; from the derived constructor,
  // since messages name the class.
  void check_args() const;
  virtual int gates() const = 0;                 // 4, 3 or 1
  virtual Shape bias_shape() const;              // (gates·units,); GRU's reset_after is (2, 3·units)
  virtual void initialize_bias(Variable&) const {}  // LSTM's unit_forget_bias
  // The part of the bias added to the input projection (GRU with reset_after: its first row).
  virtual graph::Value input_bias(CallContext& ctx);
  // The recurrent op on the projected input xw (batch, steps, gates·units).
  virtual Run recur(CallContext& ctx, graph::Value xw, const std::vector<graph::Value>& states, graph::Value mask,
                    graph::Value recurrent_scale) = 0;
  ops::RecurrentAttrs op_attrs() const;

  RecurrentArgs args_;
  const Fields<RecurrentArgs>& fields_;
  VariablePtr kernel_, recurrent_kernel_, bias_;

 private:
  graph::Value project(CallContext& ctx, graph::Value x);
  graph::Value recurrent_scale(CallContext& ctx, int64_t batch);
  uint64_t rng_seed(uint64_t stream) const;  // the seed of one of the layer's dropout masks
};

}  // namespace tandem::layers
