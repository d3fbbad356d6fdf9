// Model structure: the traced layer calls, weights and summary.
#include <algorithm>
#include <functional>
#include <set>
#include <sstream>

#include "autodiff/autodiff.h"
#include "graph/autocast.h"
#include "distribute/strategy.h"
#include "layer_base/call_context.h"
#include "layers/input_layer.h"
#include "metrics/metrics.h"
#include "model/model_impl.h"
#include "model/summary_format.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem {

void Model::Impl::set_graph(const std::vector<Symbol>& in, const std::vector<Symbol>& out) {
  const std::string who = "Model \"" + name + "\"";
  if (in.empty() || out.empty()) throw ValueError(who + ": expected at least one input and one output");
  std::set<const Symbol::Node*> input_nodes;
  for (const Symbol& s : in) {
    if (!s.node()) throw ValueError(who + ": inputs must be symbols");
    if (s.node()->layer || s.node()->trace) throw ValueError(who + ": each input must come from tandem::Input()");
    if (!input_nodes.insert(s.node().get()).second) throw ValueError(who + ": input \"" + s.node()->input_name + "\" is given twice");
  }
  for (const Symbol& s : out)
    if (!s.node()) throw ValueError(who + ": outputs must be symbols");
  inputs = in;
  outputs = out;
  calls.clear();
  layers.clear();
  std::set<const Symbol::Node*> seen, reached;
  std::function<void(const std::shared_ptr<Symbol::Node>&)> visit = [&](const std::shared_ptr<Symbol::Node>& n) {
    if (n->call) return visit(n->call);  // another output of a call: the call is what runs
    if (!seen.insert(n.get()).second) return;
    if (n->trace)
      throw ValueError(who + ": a symbol computed inside " + n->trace->owner +
                       "'s call() cannot be a model's input or output; use the symbol the layer's call returns");
    if (!n->layer) {
      if (!input_nodes.count(n.get()))
        throw ValueError(who + ": an output depends on input \"" + n->input_name + "\", which is not one of the model's inputs");
      reached.insert(n.get());
      return;
    }
    for (const Symbol& s : n->inputs) visit(s.node());
    calls.push_back(n);
    if (std::find(layers.begin(), layers.end(), n->layer) == layers.end()) layers.push_back(n->layer);
  };
  for (const Symbol& s : out) visit(s.node());
  for (const Symbol& s : in)
    if (!reached.count(s.node().get()))
      throw ValueError(in.size() == 1 ? who + ": the output does not depend on the input"
                                      : who + ": no output depends on input \"" + s.node()->input_name + "\"");
  if (!trainable)
    for (const auto& layer : layers) layer->set_trainable(false);
}

std::vector<graph::Value> Model::Impl::trace(CallContext& ctx, const std::vector<graph::Value>& xs,
                                             std::vector<graph::Value>* output_masks) const {
  // Per call (its node), every output's value and mask; a model input is a call of one output.
  std::map<const Symbol::Node*, EmittedCall> emitted;
  for (std::size_t i = 0; i < inputs.size(); ++i) emitted[inputs[i].node().get()] = {{xs.at(i)}, {graph::Value{}}};
  auto of = [&](const Symbol& s) -> std::pair<graph::Value, graph::Value> {
    const EmittedCall& e = emitted.at(s.node()->call_node());
    const auto i = static_cast<std::size_t>(s.node()->index);
    return {e.values.at(i), e.masks.at(i)};
  };
  for (const auto& call : calls) {
    std::vector<graph::Value> ins;
    ctx.input_masks.clear();
    ctx.mask_origin.clear();
    for (const Symbol& s : call->inputs) {
      const auto [v, m] = of(s);
      ins.push_back(v);
      ctx.input_masks.push_back(m);
      if (m.valid() && ctx.mask_origin.empty()) ctx.mask_origin = s.node()->mask_origin;
    }
    graph::ScopeGuard scope(ctx.g, call->layer->name());
    // The layer computes in its policy's compute dtype: a 16-bit one casts its matrix products'
    // operands (graph/autocast.h); otherwise its own float dtype.
    const DType policy = call->layer->dtype_policy().compute_dtype();
    const DType compute = graph::is_16bit(policy) ? policy : call->layer->dtype();
    graph::ComputeDtypeGuard precision(ctx.g, compute);
    // As Keras's layers do, a layer takes its float inputs in its compute dtype: a 16-bit layer's
    // float32 inputs become 16-bit, a float32 layer's 16-bit inputs float32 (float64 is left alone).
    if (ctx.g.autocast)
      for (graph::Value& v : ins)
        if (const DType t = ctx.g.type(v).dtype; t != compute && t != DType::F64 && (t == DType::F32 || graph::is_16bit(t)))
          v = ctx.g.cast(v, compute);
    if (std::find(ctx.g.layers.begin(), ctx.g.layers.end(), call->layer->name()) == ctx.g.layers.end()) ctx.g.layers.push_back(call->layer->name());
    emitted[call.get()] = emit_call(*call->layer, ctx, ins);
  }
  ctx.input_masks.clear();
  ctx.mask_origin.clear();
  std::vector<graph::Value> out;
  if (output_masks) output_masks->clear();
  for (const Symbol& s : outputs) {
    const auto [v, m] = of(s);
    out.push_back(v);
    if (output_masks) output_masks->push_back(m);
  }
  return out;
}

std::vector<graph::Value> Model::Impl::input_placeholders(graph::Graph& g, int64_t rows) const {
  std::vector<graph::Value> xs;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    xs.push_back(g.placeholder(inputs.size() == 1 ? std::string("x") : std::string("x").append(std::to_string(i)),
                               {inputs[i].shape().without_batch().with_batch(rows), inputs[i].dtype()}));
  return xs;
}

std::string Model::Impl::output_name(std::size_t i) const {
  const Symbol& s = outputs.at(i);
  return s.node()->layer ? s.node()->layer->name() : s.node()->input_name;
}

std::vector<Model::Impl::MetricSlot> Model::Impl::metric_slots() const {
  std::vector<MetricSlot> slots;
  const bool several = outputs.size() > 1;
  auto masked = [&](std::size_t i) { return outputs[i].node()->masked; };
  if (several)
    for (std::size_t i = 0; i < outputs.size() && i < losses.size(); ++i)
      slots.push_back({output_name(i).append("_loss"), "", losses[i], masked(i) ? 2u : 1u, masked(i)});
  for (std::size_t i = 0; i < outputs.size() && i < metrics.size(); ++i)
    for (const std::string& m : metrics[i]) {
      const std::size_t sums = metrics::sums(m, *losses[i], outputs[i].shape());
      const bool mean_of_masked = masked(i) && sums == 1;  // others are refused when the step is made
      slots.push_back({several ? output_name(i).append("_").append(m) : m, m, losses[i], mean_of_masked ? 2u : sums, mean_of_masked});
    }
  return slots;
}

std::size_t Model::Impl::metric_sums() const {
  std::size_t n = 0;
  for (const MetricSlot& s : metric_slots()) n += s.sums;
  return n;
}

graph::Graph Model::Impl::layer_graph(int64_t rows) const {
  graph::Graph g;
  CallContext ctx(g, true, ops::fill(g, {Shape{}, DType::I64}, 0));
  const std::vector<graph::Value> preds = trace(ctx, input_placeholders(g, rows));
  graph::Value total;
  {
    graph::ScopeGuard scope(g, "loss", graph::Role::Loss);
    for (graph::Value pred : preds) {
      const Shape s = g.type(pred).shape;
      const graph::Value sum = ops::reduce_sum(g, ops::reshape(g, pred, {s.num_elements()}), {0});
      total = total.valid() ? ops::add(g, total, sum) : sum;
    }
  }
  std::vector<graph::Value> wrt;
  for (const VariablePtr& w : weights())
    if (w->trainable()) wrt.push_back(ctx.variable(*w));
  // Read by a node of the loss (in place of the updates, which would build the optimizer's
  // slots), so the gradients count as work the step does.
  graph::ScopeGuard scope(g, "loss", graph::Role::Loss);
  for (graph::Value grad : autodiff::gradients(g, total, wrt))
    if (grad.valid()) ops::reduce_sum(g, ops::reshape(g, grad, {g.type(grad).shape.num_elements()}), {0});
  return g;
}

std::vector<VariablePtr> Model::Impl::weights() const {
  std::vector<VariablePtr> out;
  std::set<int> seen;  // a layer may also be a sublayer of a custom layer, with the same weights
  for (const auto& l : layers)
    for (const auto& w : l->weights())
      if (seen.insert(w->id()).second) out.push_back(w);
  return out;
}

Model::Model(const Symbol& input, const Symbol& output, const std::string& name)
    : Model(std::vector<Symbol>{input}, std::vector<Symbol>{output}, name) {}

Model::Model(const std::vector<Symbol>& inputs, const std::vector<Symbol>& outputs, const std::string& name)
    : impl_(std::make_unique<Impl>()) {
  impl_->name = name.empty() ? unique_layer_name("functional") : name;
  impl_->set_graph(inputs, outputs);
}

Model::Model(const std::string& name, const std::string& class_prefix) : impl_(std::make_unique<Impl>()) {
  impl_->name = name.empty() ? unique_layer_name(class_prefix) : name;
  impl_->class_name = "Sequential";
}

Model::~Model() = default;

void Model::set_graph(const Symbol& input, const Symbol& output) {
  impl_->set_graph({input}, {output});
  impl_->steps.clear();
  impl_->last_train = nullptr;
}
bool Model::has_graph() const { return !impl_->outputs.empty(); }
void Model::ensure_built(const Shape&, DType) {}

const std::string& Model::name() const { return impl_->name; }
std::vector<std::shared_ptr<Layer>> Model::layers() const { return impl_->layers; }
std::shared_ptr<Layer> Model::get_layer(const std::string& name) const {
  for (const auto& layer : impl_->layers)
    if (layer->name() == name) return layer;
  std::string names;
  for (const auto& layer : impl_->layers) names.append(names.empty() ? "" : ", ").append(layer->name());
  throw ValueError("Model \"" + impl_->name + "\": get_layer: no layer is named \"" + name + "\"; its layers are: " +
                   (names.empty() ? std::string("none (the model is not built yet)") : names));
}
std::shared_ptr<Layer> Model::get_layer(std::size_t index) const {
  if (index >= impl_->layers.size())
    throw ValueError("Model \"" + impl_->name + "\": get_layer: index " + std::to_string(index) + " is out of range; the model has " +
                     std::to_string(impl_->layers.size()) + " layers");
  return impl_->layers[index];
}
const std::vector<Symbol>& Model::inputs() const { return impl_->inputs; }
const std::vector<Symbol>& Model::outputs() const { return impl_->outputs; }
bool Model::trainable() const { return impl_->trainable; }
void Model::set_trainable(bool trainable) {
  impl_->trainable = trainable;
  for (const auto& layer : impl_->layers) layer->set_trainable(trainable);
}
std::vector<VariablePtr> Model::weights() const { return impl_->weights(); }
std::vector<VariablePtr> Model::trainable_weights() const {
  std::vector<VariablePtr> out;
  for (const auto& w : impl_->weights())
    if (w->trainable()) out.push_back(w);
  return out;
}
std::vector<Tensor> Model::get_weights() const {
  impl_->host_view();
  std::vector<Tensor> out;
  for (const auto& w : impl_->weights()) out.push_back(w->value().clone());
  return out;
}
void Model::set_weights(const std::vector<Tensor>& values) {
  impl_->host_view();
  const auto ws = impl_->weights();
  if (values.size() != ws.size())
    throw ValueError("Model \"" + impl_->name + "\": set_weights expected " + std::to_string(ws.size()) + " arrays, got " +
                     std::to_string(values.size()));
  for (std::size_t i = 0; i < ws.size(); ++i) ws[i]->assign(values[i].cast(ws[i]->value().dtype()));
  impl_->host_changed();
}
const OptimizerPtr& Model::optimizer() const { return impl_->optimizer; }
std::size_t Model::planned_arena_bytes() const { return impl_->last_train ? impl_->last_train->exe->arena_bytes(0) : 0; }

std::string Model::summary_string() {
  std::vector<detail::SummaryRow> rows;
  detail::SummaryTotals totals;
  const bool functional = impl_->class_name == "Functional";
  if (functional)
    for (const Symbol& in : impl_->inputs) rows.push_back({in.node()->input_name, "InputLayer", in.shape().str(), 0, {}});
  for (const auto& call : impl_->calls) {
    std::vector<std::string> from;
    for (const Symbol& s : call->inputs)
      from.push_back((s.node()->layer ? s.node()->layer->name() : s.node()->input_name) + "[0][" + std::to_string(s.node()->index) + "]");
    const bool first_use = std::none_of(rows.begin(), rows.end(), [&](const auto& r) { return r.name == call->layer->name(); });
    std::string shape = call->shape.str();
    if (call->output_shapes.size() > 1) {  // Keras lists each output's shape
      shape = "[";
      for (std::size_t i = 0; i < call->output_shapes.size(); ++i) shape.append(i ? ", " : "").append(call->output_shapes[i].str());
      shape += "]";
    }
    rows.push_back({call->layer->name(), call->layer->class_name(), shape, first_use ? call->layer->count_params() : 0, from});
  }
  for (const auto& w : impl_->weights()) {
    const int64_t bytes = static_cast<int64_t>(w->value().bytes());
    if (w->trainable()) totals.trainable += w->value().size(), totals.trainable_bytes += bytes;
    else totals.non_trainable += w->value().size(), totals.non_trainable_bytes += bytes;
  }
  if (impl_->optimizer && impl_->optimizer->built())
    for (const auto& v : impl_->optimizer->variables())
      totals.optimizer += v->value().size(), totals.optimizer_bytes += static_cast<int64_t>(v->value().bytes());
  std::string out = detail::format_summary(impl_->name, rows, functional, totals);
  if (impl_->compiled && impl_->strategy) {
    // Layer costs grow with the rows alike, so any batch size shows the same shares.
    const distribute::PlacementTable t = impl_->strategy->placement(impl_->layer_graph(32));
    if (!t.rows.empty()) out += detail::format_placement(t.title, t.header, t.rows, t.right, t.notes);
  }
  if (const CompiledStep* step = impl_->last_train) out += detail::format_memory(memory_per_device(), step->micro_rows * step->pieces);
  return out;
}

void Model::summary(std::ostream& out) { out << summary_string(); }

Sequential::Sequential(std::vector<LayerRef> layers, const std::string& name) : Model(name, "sequential") {
  for (auto& l : layers) add(std::move(l));
}

void Sequential::add(LayerRef layer) {
  if (const Shape* shape = layers::input_layer_shape(*layer)) {
    if (!layers_.empty()) throw ValueError("Sequential \"" + name() + "\": an InputLayer must come first");
    layers_.push_back(std::move(layer));
    build(*shape);
    return;
  }
  layers_.push_back(std::move(layer));
  if (input_shape_) build(*input_shape_, dtype_);  // layers added after building join the chain
}

void Sequential::build(const Shape& input_shape, DType dtype, const std::string& input_name) {
  input_shape_ = input_shape;
  dtype_ = dtype;
  Symbol x = Input(input_shape, dtype, input_name);
  Symbol y = x;
  for (const LayerRef& l : layers_)
    if (!layers::input_layer_shape(*l)) y = l(y);
  if (y.node() != x.node()) set_graph(x, y);
}

void Sequential::ensure_built(const Shape& sample_shape, DType dtype) {
  if (!input_shape_) build(sample_shape, dtype);
  if (!has_graph()) throw ValueError("Sequential \"" + name() + "\": the model has no layers");
}

}  // namespace tandem
