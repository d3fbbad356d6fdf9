// Layers and symbolic tensors: the functional API. A layer called on symbols records a call; a
// Model traces those calls into a static graph for each batch size it runs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "tandem/initializers.h"
#include "tandem/layer_config.h"
#include "tandem/mixed_precision.h"
#include "tandem/regularizers.h"
#include "tandem/tensor.h"

namespace tandem {

namespace graph {
struct Value;
}
struct Trace;
class CallContext;  // what a layer's emit() writes into; defined in the library
class Layer;

// A persistent tensor owned by a layer or optimizer: weights, slots, statistics.
class Variable {
 public:
  Variable(std::string path, Tensor value, bool trainable);
  int id() const { return id_; }
  const std::string& path() const { return path_; }  // "dense_1/kernel"
  const std::string& name() const { return name_; }  // "kernel"
  // Created trainable and not frozen by its layer (Layer::set_trainable): what fit updates.
  bool trainable() const { return trainable_ && !frozen_; }
  Tensor& value() { return value_; }
  const Tensor& value() const { return value_; }
  void assign(const Tensor& t);  // checks shape and dtype, copies into the existing storage
  // Keras's variable.regularizer and variable.constraint (none by default): the penalty a trainable
  // weight adds to the loss, and the projection applied after each of its updates.
  const Regularizer& regularizer() const { return regularizer_; }
  const Constraint& constraint() const { return constraint_; }
  void set_regularizer(Regularizer r) { regularizer_ = std::move(r); }
  void set_constraint(Constraint c) { constraint_ = std::move(c); }
  // An optimizer's variable (a slot, a counter) says so, and a slot names the weight it belongs
  // to: strategies place and split the optimizer's state by these, not by its path.
  bool optimizer_state() const { return optimizer_state_; }
  const std::string& slot_of() const { return slot_of_; }  // the weight's path; "" unless a slot
  // Library use (optimizers): marks it as the optimizer's state, a slot of `weight` if one is given.
  void set_optimizer_state(const Variable* weight = nullptr);

 private:
  Regularizer regularizer_;
  Constraint constraint_;
  int id_;
  std::string path_, name_;
  std::string slot_of_;
  bool optimizer_state_ = false;
  Tensor value_;
  bool trainable_;
  bool frozen_ = false;
  friend class Layer;  // freezes its weights
};
using VariablePtr = std::shared_ptr<Variable>;

// A symbolic tensor. A model's symbols come from Input() and layer calls; their batch dimension is
// None (-1). Inside a Layer's call (or a loss function) the symbols are that call's traced tensors,
// with the batch the model is traced for; tandem/ops.h computes with both kinds.
class Symbol {
 public:
  struct Node;  // producer layer, inputs, output shape
  Symbol() = default;
  explicit Symbol(std::shared_ptr<Node> node) : node_(std::move(node)) {}
  // Inside a Layer's call: one of its weights, as a symbol (ops::matmul(x, kernel_)). Anywhere
  // else this throws ValueError.
  Symbol(const VariablePtr& weight);
  const Shape& shape() const;
  DType dtype() const;
  const std::shared_ptr<Node>& node() const { return node_; }

 private:
  std::shared_ptr<Node> node_;
};

// A model input of the given shape (batch excluded), like keras.Input.
Symbol Input(Shape shape, DType dtype = DType::F32, const std::string& name = "");

// Tensor inputs that a layer's call takes under a keyword, as one list (Keras's recurrent layers:
// `lstm(x, initial_state=[h, c])`). Inputs [0, positional) are passed positionally; the rest, if
// any, go under `keyword`. Saved configs record them so (inbound_nodes' "args" and "kwargs"), and
// loading reads them back into the layer's input list in the same order.
struct CallKeywordInputs {
  int positional = -1;  // -1: every input is positional
  std::string keyword;
};

class Layer : public std::enable_shared_from_this<Layer> {
 public:
  virtual ~Layer() = default;
  const std::string& name() const { return name_; }
  virtual std::string class_name() const = 0;
  // The layer's constructor arguments as a JSON object, under Keras's names (Keras's get_config):
  // what Model::save stores and load_model rebuilds the layer from. The base class has none and
  // throws ValueError, so a model with a layer that does not override it cannot be saved whole.
  virtual std::string config_json() const;
  bool built() const { return built_; }
  // The float dtype the layer computes in and keeps its weights in: its first float input's
  // when it was built (float32 or float64), float32 for integer inputs.
  DType dtype() const { return dtype_; }
  // Keras's layer.dtype_policy: the global policy when the layer was made
  // (mixed_precision::set_global_policy), or the one set here or read from a saved config. Saved
  // in the layer's config as Keras writes it. Until the pass that computes in the policy's compute
  // dtype exists (docs/mixed-precision.md), the layer computes as dtype() says.
  const DTypePolicy& dtype_policy() const { return dtype_policy_; }
  void set_dtype_policy(const DTypePolicy& policy) { dtype_policy_ = policy; }
  void set_dtype_policy(const std::string& name);  // ValueError naming the layer for an unknown name
  const std::vector<VariablePtr>& weights() const { return weights_; }
  int64_t count_params() const;
  // Keras's layer.trainable. False freezes the layer and its sublayers: fit leaves their weights
  // unchanged (they count as non-trainable) and BatchNormalization runs in inference mode, as in
  // Keras 3. Saved with the model; fit after a change recompiles its training step.
  bool trainable() const { return trainable_; }
  void set_trainable(bool trainable);
  // Keras's layer.output: the output of the layer's one call (to build a model on another
  // model's intermediate output). ValueError if the layer was never called, was called more than
  // once, or its call has several outputs.
  Symbol output() const;
  std::vector<Tensor> get_weights() const;
  void set_weights(const std::vector<Tensor>& values);  // same order and shapes as weights()

  // The layer's single output. A layer whose call has several outputs (LSTM(return_state=true))
  // throws ValueError here: use outputs().
  Symbol operator()(const Symbol& x);
  Symbol operator()(const std::vector<Symbol>& xs);
  // Every output of one call, in the layer's order (each may be a model output or another
  // layer's input on its own).
  std::vector<Symbol> outputs(const Symbol& x);
  std::vector<Symbol> outputs(const std::vector<Symbol>& xs);

  // Creates the weights for inputs of these shapes (batch excluded); called once, on first use.
  void build_for(const std::vector<Shape>& input_shapes);
  // Emits the layer's ops into ctx's graph and returns its output (library use). The built-in
  // layers override it; the default traces call().
  virtual graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs);
  // Every output of the call (library use). A layer with several outputs overrides this; the
  // default is emit()'s one output.
  virtual std::vector<graph::Value> emit_outputs(CallContext& ctx, const std::vector<graph::Value>& inputs);
  // Which inputs the call takes by keyword (see CallKeywordInputs); the default: none.
  virtual CallKeywordInputs keyword_inputs() const { return {}; }

  // Masks (Keras's supports_masking and compute_mask; docs/custom-layers.md, "Masks"). A mask
  // marks the steps of a sequence that count: (batch, steps), 1 or 0 in the layer's dtype. Masks
  // are made by Embedding(mask_zero) and Masking and travel with the values through the model.
  // A layer that supports masking passes its first input's mask on to its first output; a layer
  // that does not throws ValueError when it is called on a masked input. Default: false.
  virtual bool supports_masking() const { return false; }
  // The masks of the call's outputs (library use): invalid values where none. Read the inputs'
  // masks from ctx.input_masks. The default applies supports_masking() as above; layers that
  // make, combine or consume masks override it.
  virtual std::vector<graph::Value> emit_output_masks(CallContext& ctx, const std::vector<graph::Value>& inputs,
                                                      const std::vector<graph::Value>& outputs);

  // Keras's activity_regularizer: a penalty of each of the layer's outputs, divided by its batch
  // size, added to the loss of fit and evaluate (none by default). Saved in the layer's config.
  const Regularizer& activity_regularizer() const { return activity_regularizer_; }
  void set_activity_regularizer(Regularizer r) { activity_regularizer_ = std::move(r); }

 protected:
  // A custom layer (Keras's subclassing): derive from Layer, pass a name prefix ("my_layer") and
  // the user's name ("" = automatic) here, override class_name(), build() to add weights, call()
  // and, to be saved whole and loaded by load_model, get_config() and register_layer().
  Layer(const std::string& class_prefix, const std::string& name);
  virtual void build(const std::vector<Shape>& /*input_shapes*/) {}
  // The layer's output, computed from `inputs` with tandem/ops.h, the layer's weights and other
  // layers (whose weights then become this layer's too). `training` is false in evaluate and
  // predict. The default throws ValueError: a layer must override emit() or call().
  virtual Symbol call(const std::vector<Symbol>& inputs, bool training);
  // The layer's own constructor arguments (Keras's get_config without name, trainable and dtype,
  // which config_json adds). The default throws ValueError: the layer cannot be saved whole.
  virtual LayerConfig get_config() const;
  // A new weight filled by `initializer`, with an optional regularizer and constraint (Keras's
  // add_weight). A built-in layer passes its options' kernel_regularizer, kernel_constraint, ...
  VariablePtr add_weight(const std::string& name, Shape shape, const Initializer& initializer, bool trainable = true,
                         const Regularizer& regularizer = {}, const Constraint& constraint = {});
  // Builds `layer` for inputs of these shapes in this layer's dtype and makes its weights this
  // layer's too (a wrapper such as Bidirectional, from its build()).
  void build_sublayer(const std::shared_ptr<Layer>& layer, const std::vector<Shape>& input_shapes);
  std::string who() const;  // `Dense "dense_1"`: the class and the name, for messages

 private:
  Regularizer activity_regularizer_;
  std::vector<Symbol> call_inside(const std::shared_ptr<Trace>& trace, const std::vector<Symbol>& xs);
  void add_sublayer(const std::shared_ptr<Layer>& layer);
  void take_dtype(const std::vector<Symbol>& xs);  // before the first build
  std::string name_;
  bool built_ = false;
  DType dtype_ = DType::F32;
  DTypePolicy dtype_policy_;  // the global one at construction
  std::vector<VariablePtr> weights_;
  std::vector<std::shared_ptr<Layer>> sublayers_;
  bool trainable_ = true;
  std::vector<std::weak_ptr<Symbol::Node>> calls_;  // for output(); weak: a call holds its layer
};

// What load_model calls to rebuild a custom layer of class `class_name` from its config (Keras's
// from_config with register_keras_serializable). Register each class once, before loading, from
// one thread (a static initialiser will do); registering a name twice is an error that the next
// load reports with both places.
using LayerFactory = std::function<std::shared_ptr<Layer>(const LayerConfig& config)>;
void register_layer(const std::string& class_name, LayerFactory make,
                    std::source_location where = std::source_location::current());

// What layer factories return: shares the layer; calling it applies the layer (sharing weights).
class LayerRef {
 public:
  LayerRef(std::shared_ptr<Layer> layer) : layer_(std::move(layer)) {}
  Symbol operator()(const Symbol& x) const { return (*layer_)(x); }
  Symbol operator()(const std::vector<Symbol>& xs) const { return (*layer_)(xs); }
  std::vector<Symbol> outputs(const Symbol& x) const { return layer_->outputs(x); }
  std::vector<Symbol> outputs(const std::vector<Symbol>& xs) const { return layer_->outputs(xs); }
  Layer* operator->() const { return layer_.get(); }
  Layer& operator*() const { return *layer_; }
  const std::shared_ptr<Layer>& ptr() const { return layer_; }

 private:
  std::shared_ptr<Layer> layer_;
};

// The seed behind every initializer, dropout mask and shuffle (keras.utils.set_random_seed).
void set_random_seed(uint64_t seed);

}  // namespace tandem
