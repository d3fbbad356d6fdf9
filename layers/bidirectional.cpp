// Bidirectional: an LSTM, GRU or SimpleRNN run forwards and a copy of it backwards over the same
// sequence, the backward one's sequence put back in time order, the two merged. As in Keras, the
// copies are "forward_<name>" and "backward_<name>" (go_backwards flipped), both return zeros at
// masked steps when they return sequences, and initial states are the forward layer's then the
// backward one's.
#include "layer_base/call_context.h"
#include "layers/recurrent_layer.h"
#include "ops/attention.h"
#include "ops/ops.h"

namespace tandem::layers {

namespace {
const char* const kMergeModes[] = {"concat", "sum", "mul", "ave", ""};

std::string without_prefix(const std::string& name, const std::string& prefix) {
  return name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
}

std::shared_ptr<RecurrentLayer> as_recurrent(const std::shared_ptr<Layer>& layer, const std::string& owner) {
  auto r = std::dynamic_pointer_cast<RecurrentLayer>(layer);
  if (!r) throw ValueError(owner + ": expected an LSTM, GRU or SimpleRNN layer to wrap, got " + layer->class_name() + " \"" + layer->name() + "\"");
  if (r->built()) throw ValueError(owner + ": the layer to wrap, " + r->class_name() + " \"" + r->name() + "\", has been called already; pass a new one");
  return r;
}

// The copy Keras makes of a wrapped layer: renamed, and zeros at masked steps when it returns sequences.
std::shared_ptr<RecurrentLayer> copy(const RecurrentLayer& layer, const std::string& prefix, bool flip_direction) {
  RecurrentArgs a = layer.args();
  a.options.name = prefix + without_prefix(layer.name(), prefix);
  if (flip_direction) a.options.go_backwards = !a.options.go_backwards;
  a.zero_output_for_mask = a.options.return_sequences;
  return layer.with_args(a);
}

// A wrapped layer's entry as Keras nests it, with the shape it was built for (batch first, null).
Json layer_json(const Layer& layer, const Shape& built_for) {
  Json j = {{"module", "keras.layers"}, {"class_name", layer.class_name()}, {"config", Json::parse(layer.config_json())}, {"registered_name", nullptr}};
  if (built_for.rank()) {
    Json shape = Json::array({nullptr});
    for (int64_t d : built_for.dims()) shape.push_back(d);
    j["build_config"] = {{"input_shape", shape}};
  }
  return j;
}

class BidirectionalLayer : public Layer {
 public:
  BidirectionalLayer(std::shared_ptr<RecurrentLayer> forward, std::shared_ptr<RecurrentLayer> backward, std::string merge_mode,
                     const std::string& name)
      : Layer("bidirectional", name), merge_mode_(std::move(merge_mode)) {
    bool known = false;
    for (const char* m : kMergeModes) known = known || merge_mode_ == m;
    if (!known) throw ValueError(who() + ": merge_mode must be \"concat\", \"sum\", \"mul\", \"ave\" or None (\"\"), got \"" + merge_mode_ + "\"");
    const RecurrentArgs &f = forward->args(), &b = backward->args();
    if (f.options.go_backwards == b.options.go_backwards)
      throw ValueError(who() + ": the forward and backward layers must run in opposite directions (go_backwards)");
    if (f.options.return_sequences != b.options.return_sequences || f.options.return_state != b.options.return_state)
      throw ValueError(who() + ": the forward and backward layers must agree on return_sequences and return_state");
    forward_ = copy(*forward, "forward_", false);
    backward_ = copy(*backward, "backward_", false);
  }
  std::string class_name() const override { return "Bidirectional"; }
  std::string config_json() const override {
    Json args = {{"merge_mode", merge_mode_.empty() ? Json(nullptr) : Json(merge_mode_)},
                 {"layer", layer_json(*forward_, input_shape_)},
                 {"backward_layer", layer_json(*backward_, input_shape_)}};
    return config_text(*this, args);
  }

  void build(const std::vector<Shape>& in) override {
    input_shape_ = in.at(0);
    build_sublayer(forward_, {in.at(0)});
    build_sublayer(backward_, {in.at(0)});
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override { return emit_outputs(ctx, inputs).at(0); }
  CallKeywordInputs keyword_inputs() const override { return {1, "initial_state"}; }
  // As Keras: sequence outputs keep the input's mask (both with merge_mode None); the rest none.
  std::vector<graph::Value> emit_output_masks(CallContext& ctx, const std::vector<graph::Value>&,
                                              const std::vector<graph::Value>& outputs) override {
    std::vector<graph::Value> masks(outputs.size());
    if (forward_->args().options.return_sequences) masks[0] = ctx.input_mask(0);
    if (forward_->args().options.return_sequences && merge_mode_.empty()) masks[1] = ctx.input_mask(0);
    return masks;
  }

  std::vector<graph::Value> emit_outputs(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const std::size_t states = static_cast<std::size_t>(forward_->state_count());
    if (inputs.size() != 1 && inputs.size() != 1 + 2 * states)
      throw ValueError(who() + ": expected the sequence alone or the sequence and " + std::to_string(2 * states) +
                       " initial states (the forward layer's, then the backward one's), got " + std::to_string(inputs.size()) + " inputs");
    const auto first = inputs.begin() + 1, middle = first + static_cast<std::ptrdiff_t>(inputs.size() > 1 ? states : 0);
    const graph::Value mask = ctx.input_mask(0);
    const RecurrentLayer::Run f = forward_->run(ctx, inputs[0], {first, middle}, mask);
    const RecurrentLayer::Run b = backward_->run(ctx, inputs[0], {middle, inputs.end()}, mask);
    const bool sequences = forward_->args().options.return_sequences;
    const graph::Value yf = sequences ? f.sequence : f.states[0];
    const graph::Value yb = sequences ? ops::reverse(ctx.g, b.sequence, 1) : b.states[0];
    std::vector<graph::Value> out = merge(ctx.g, yf, yb);
    if (forward_->args().options.return_state) {
      out.insert(out.end(), f.states.begin(), f.states.end());
      out.insert(out.end(), b.states.begin(), b.states.end());
    }
    return out;
  }

 private:
  std::vector<graph::Value> merge(graph::Graph& g, graph::Value a, graph::Value b) const {
    if (merge_mode_ == "concat") return {ops::concat(g, {a, b}, -1)};
    if (merge_mode_ == "sum") return {ops::add(g, a, b)};
    if (merge_mode_ == "mul") return {ops::mul(g, a, b)};
    if (merge_mode_ == "ave") return {ops::scale(g, ops::add(g, a, b), 0.5)};
    return {a, b};
  }

  std::string merge_mode_;
  std::shared_ptr<RecurrentLayer> forward_, backward_;
  Shape input_shape_;  // the sequence's, batch excluded, once built
};

std::shared_ptr<Layer> nested_layer(const ConfigReader& c, const char* key) {
  const Json* j = c.value(key);
  if (!j || !j->is_object() || !j->contains("class_name") || !j->at("class_name").is_string() || !j->contains("config"))
    c.fail(key, "a layer: {\"class_name\": ..., \"config\": {...}}");
  return layer_from_config(j->at("class_name").get<std::string>(), j->at("config"));
}

const RegisterLayer registered("Bidirectional", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  const std::string owner = "Bidirectional \"" + c.name() + "\"";
  const std::shared_ptr<RecurrentLayer> layer = as_recurrent(nested_layer(c, "layer"), owner);
  const std::shared_ptr<RecurrentLayer> backward =
      c.has("backward_layer") && !c.value("backward_layer")->is_null() ? as_recurrent(nested_layer(c, "backward_layer"), owner)
                                                                         : copy(*layer, "backward_", true);
  const Json* mode = c.value("merge_mode");
  if (mode && !mode->is_null() && !mode->is_string()) c.fail("merge_mode", "\"concat\", \"sum\", \"mul\", \"ave\" or null");
  return std::make_shared<BidirectionalLayer>(layer, backward, !mode ? "concat" : mode->is_null() ? "" : mode->get<std::string>(), c.name());
});
}  // namespace

LayerRef Bidirectional(const LayerRef& layer, const BidirectionalOptions& options) {
  const std::string owner = "Bidirectional \"" + options.name + "\"";
  const std::shared_ptr<RecurrentLayer> r = as_recurrent(layer.ptr(), owner);
  return LayerRef(std::make_shared<BidirectionalLayer>(r, copy(*r, "backward_", true), options.merge_mode, options.name));
}

}  // namespace tandem::layers
