// Variables, the Layer base class and symbolic calls.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <new>
#include <map>
#include <mutex>

#include "graph/graph.h"
#include "ops/ops.h"
#include "layer_base/call_context.h"
#include "layer_base/initializers.h"
#include "layer_base/penalties.h"
#include "layer_base/symbol.h"
#include "tandem/errors.h"

namespace tandem {

namespace {
std::atomic<int> next_variable_id{0};
}

Variable::Variable(std::string path, Tensor value, bool trainable)
    : id_(next_variable_id++), path_(std::move(path)), value_(std::move(value)), trainable_(trainable) {
  const auto slash = path_.rfind('/');
  name_ = slash == std::string::npos ? path_ : path_.substr(slash + 1);
}

void Variable::set_optimizer_state(const Variable* weight) {
  optimizer_state_ = true;
  slot_of_ = weight ? weight->path() : std::string();
}

void Variable::assign(const Tensor& t) {
  if (t.shape() != value_.shape() || t.dtype() != value_.dtype())
    throw ShapeError("variable \"" + path_ + "\": expected " + dtype_name(value_.dtype()) + " " + value_.shape().str() +
                     ", got " + dtype_name(t.dtype()) + " " + t.shape().str());
  if (t.bytes()) std::memcpy(value_.raw(), t.raw(), t.bytes());
}

std::string unique_layer_name(const std::string& prefix) {
  static std::mutex mutex;
  static std::map<std::string, int> counts;
  std::lock_guard lock(mutex);
  const int n = counts[prefix]++;
  return n == 0 ? prefix : prefix + "_" + std::to_string(n);
}

const Shape& Symbol::shape() const { return node_->shape; }
DType Symbol::dtype() const { return node_->dtype; }

Symbol Input(Shape shape, DType dtype, const std::string& name) {
  auto node = std::make_shared<Symbol::Node>();
  node->shape = shape.with_batch(-1);
  node->dtype = dtype;
  node->input_name = name.empty() ? unique_layer_name("input_layer") : name;
  return Symbol(node);
}

Layer::Layer(const std::string& class_prefix, const std::string& name)
    : name_(name.empty() ? unique_layer_name(class_prefix) : name) {}

void Layer::set_dtype_policy(const std::string& name) {
  try {
    dtype_policy_ = DTypePolicy(name);
  } catch (const ValueError& e) {
    throw ValueError(who() + ": dtype " + std::string(e.what()).substr(std::string("DTypePolicy: ").size()));
  }
}

int64_t Layer::count_params() const {
  int64_t n = 0;
  for (const auto& w : weights_) n += w->value().size();
  return n;
}

std::vector<Tensor> Layer::get_weights() const {
  std::vector<Tensor> out;
  for (const auto& w : weights_) out.push_back(w->value().clone());
  return out;
}

void Layer::set_weights(const std::vector<Tensor>& values) {
  if (values.size() != weights_.size())
    throw ValueError(class_name() + " \"" + name_ + "\": set_weights expected " + std::to_string(weights_.size()) +
                     " arrays, got " + std::to_string(values.size()));
  for (std::size_t i = 0; i < values.size(); ++i) weights_[i]->assign(values[i].cast(weights_[i]->value().dtype()));
}

VariablePtr Layer::add_weight(const std::string& name, Shape shape, const Initializer& initializer, bool trainable,
                              const Regularizer& regularizer, const Constraint& constraint) {
  check_regularizer(regularizer, who() + ": the regularizer of \"" + name + "\"");
  check_constraint(constraint, who() + ": the constraint of \"" + name + "\"");
  // A layer's arguments may come from a file (Conv2D's kernel_size [1000000000, 1000000000]): an
  // impossible size is an error naming the layer and the shape, not an overflow or a bare bad_alloc.
  // The initializer fills the weight in doubles first, so 8 bytes an element must fit.
  auto too_large = [&](const std::string& why) {
    return ValueError(who() + ": the weight \"" + name + "\" of shape " + shape.str() + " " + why);
  };
  int64_t elements = 1;
  for (int64_t d : shape.dims())
    if (d < 0 || __builtin_mul_overflow(elements, d, &elements) || elements > std::numeric_limits<int64_t>::max() / 8)
      throw too_large("has too many elements to be stored (more than 2^60)");
  Tensor value;
  try {
    value = initialize(initializer, shape, dtype_, who());
  } catch (const std::bad_alloc&) {
    throw too_large("needs " + std::to_string(elements) + " elements, more memory than this machine can allocate");
  }
  auto v = std::make_shared<Variable>(name_ + "/" + name, std::move(value), trainable);
  v->frozen_ = !trainable_;
  v->set_regularizer(regularizer);
  v->set_constraint(constraint);
  weights_.push_back(v);
  return v;
}

void Layer::set_trainable(bool trainable) {
  trainable_ = trainable;
  for (const VariablePtr& w : weights_) w->frozen_ = !trainable;
  for (const auto& layer : sublayers_) layer->set_trainable(trainable);
}

Symbol Layer::output() const {
  std::vector<std::shared_ptr<Symbol::Node>> calls;
  for (const auto& c : calls_)
    if (auto node = c.lock()) calls.push_back(std::move(node));
  if (calls.empty()) throw ValueError(who() + ": has no output yet; call the layer on a symbol first");
  if (calls.size() > 1)
    throw ValueError(who() + ": was called " + std::to_string(calls.size()) +
                     " times, so it has no single output; use the symbols its calls returned");
  if (calls[0]->output_shapes.size() > 1)
    throw ValueError(who() + ": its call has " + std::to_string(calls[0]->output_shapes.size()) +
                     " outputs, so it has no single output; use the symbols .outputs(...) returned");
  return Symbol(calls[0]);
}

void Layer::build_for(const std::vector<Shape>& input_shapes) {
  if (built_) return;
  build(input_shapes);
  built_ = true;
}

Symbol Layer::operator()(const Symbol& x) { return (*this)(std::vector<Symbol>{x}); }
std::vector<Symbol> Layer::outputs(const Symbol& x) { return outputs(std::vector<Symbol>{x}); }

std::string Layer::who() const { return class_name() + " \"" + name_ + "\""; }

Symbol Layer::operator()(const std::vector<Symbol>& xs) {
  std::vector<Symbol> ys = outputs(xs);
  if (ys.size() != 1)
    throw ValueError(who() + ": its call has " + std::to_string(ys.size()) +
                     " outputs, so calling it gives no single symbol; use .outputs(...) to get them all");
  return ys[0];
}

std::vector<Symbol> Layer::outputs(const std::vector<Symbol>& xs) {
  if (const std::shared_ptr<Trace> trace = common_trace(xs, who())) return call_inside(trace, xs);
  std::vector<Shape> shapes;
  for (const Symbol& s : xs) shapes.push_back(s.shape().without_batch());
  take_dtype(xs);
  build_for(shapes);
  // The output shapes (and masks) come from tracing this one call with a batch of 1 into a
  // scratch graph; a masked input gets a mask placeholder, so the layer's mask rules run now and
  // a layer that cannot take a mask is refused here, where the model is written.
  graph::Graph g;
  std::vector<graph::Value> ins;
  CallContext ctx(g, false, g.placeholder("step", {Shape{}, DType::I64}));
  for (std::size_t i = 0; i < xs.size(); ++i) {
    ins.push_back(g.placeholder("in" + std::to_string(i), {shapes[i].with_batch(1), xs[i].dtype()}));
    const Symbol::Node& n = *xs[i].node();
    ctx.input_masks.push_back(n.masked ? g.placeholder("mask" + std::to_string(i), {n.mask_shape.without_batch().with_batch(1), dtype_})
                                       : graph::Value{});
    if (n.masked && ctx.mask_origin.empty()) ctx.mask_origin = n.mask_origin;
  }
  graph::ScopeGuard scope(g, name_);
  const EmittedCall out = emit_call(*this, ctx, ins);
  auto call = std::make_shared<Symbol::Node>();
  call->layer = shared_from_this();
  call->inputs = xs;
  std::vector<Symbol> ys;
  for (std::size_t i = 0; i < out.values.size(); ++i) {
    auto node = i == 0 ? call : std::make_shared<Symbol::Node>();
    node->layer = call->layer;
    if (i > 0) node->call = call;
    node->index = static_cast<int>(i);
    node->shape = g.type(out.values[i]).shape;
    node->shape[0] = -1;
    node->dtype = g.type(out.values[i]).dtype;
    call->output_shapes.push_back(node->shape);
    if (const graph::Value m = out.masks[i]; m.valid()) {
      node->masked = true;
      node->mask_shape = g.type(m).shape;
      node->mask_shape[0] = -1;
      // A mask passed on unchanged keeps its origin; a new one is this layer's.
      const auto same = std::find(ctx.input_masks.begin(), ctx.input_masks.end(), m);
      node->mask_origin = same != ctx.input_masks.end() ? xs[static_cast<std::size_t>(same - ctx.input_masks.begin())].node()->mask_origin
                                                         : who();
    }
    ys.push_back(Symbol(node));
  }
  std::erase_if(calls_, [](const auto& c) { return c.expired(); });  // calls of symbols since dropped
  calls_.push_back(call);
  return ys;
}

void CallContext::add_activity_penalty(graph::Value y, const Regularizer& r, const std::string& owner) {
  const TensorType t = g.type(y);
  if (!r || !ops::is_float(t.dtype)) return;
  graph::Value loss = regularization_penalty(g, y, r, owner);
  if (t.shape.rank() > 0) loss = ops::scale(g, loss, 1.0 / (double(t.shape[0]) * double(micro_batches)));
  added_losses.push_back(loss);
}

namespace {
// Keras's Layer.__call__: the activity regularizer's penalty of each float output goes to the loss.
void add_activity_losses(const Layer& layer, CallContext& ctx, const std::vector<graph::Value>& outputs) {
  if (!layer.activity_regularizer()) return;
  for (graph::Value y : outputs)
    ctx.add_activity_penalty(y, layer.activity_regularizer(), layer.class_name() + " \"" + layer.name() + "\": activity_regularizer");
}
}  // namespace

EmittedCall emit_call(Layer& layer, CallContext& ctx, const std::vector<graph::Value>& inputs) {
  const std::string who = layer.class_name() + " \"" + layer.name() + "\"";
  EmittedCall out;
  out.values = layer.emit_outputs(ctx, inputs);
  if (out.values.empty()) throw ValueError(who + ": the layer's call has no outputs");
  add_activity_losses(layer, ctx, out.values);
  out.masks = layer.emit_output_masks(ctx, inputs, out.values);
  if (out.masks.size() != out.values.size())
    throw ValueError(who + ": emit_output_masks gave " + std::to_string(out.masks.size()) + " masks for " +
                     std::to_string(out.values.size()) + " outputs; expected one per output (invalid where none)");
  return out;
}

// A layer called inside another layer's call(): it is traced into the same graph at once, and
// becomes a sublayer of the caller, whose weights then include its weights. Masks do not reach
// inside a custom layer's call.
std::vector<Symbol> Layer::call_inside(const std::shared_ptr<Trace>& trace, const std::vector<Symbol>& xs) {
  if (!trace->ctx)
    throw ValueError(who() + ": layers cannot be called in " + trace->owner + "; a loss function computes with tandem::ops only");
  if (trace->layer == this) throw ValueError(who() + ": its call() calls the layer itself");
  const std::shared_ptr<Layer> self = weak_from_this().lock();
  if (!self)
    throw ValueError(who() + ": a layer called inside " + trace->owner +
                     "'s call() must be held by a std::shared_ptr (make it with a factory such as layers::Dense, or std::make_shared)");
  std::vector<Shape> shapes;
  std::vector<graph::Value> ins;
  for (const Symbol& s : xs) {
    shapes.push_back(s.shape().without_batch());
    ins.push_back(s.node()->value);
  }
  take_dtype(xs);
  build_for(shapes);
  if (trace->layer) trace->layer->add_sublayer(self);
  graph::ScopeGuard scope(trace->g, name_);
  CallContext& ctx = *trace->ctx;
  std::vector<graph::Value> outer_masks(ins.size());
  std::swap(outer_masks, ctx.input_masks);
  std::vector<graph::Value> values;
  try {
    values = emit_outputs(ctx, ins);
  } catch (...) {
    ctx.input_masks = std::move(outer_masks);
    throw;
  }
  ctx.input_masks = std::move(outer_masks);
  add_activity_losses(*this, ctx, values);
  std::vector<Symbol> ys;
  for (graph::Value v : values) ys.push_back(traced_symbol(trace, v));
  return ys;
}

void Layer::take_dtype(const std::vector<Symbol>& xs) {
  if (built_) return;
  for (const Symbol& s : xs)
    if (s.dtype() == DType::F32 || s.dtype() == DType::F64) {
      dtype_ = s.dtype();
      return;
    }
}

void Layer::build_sublayer(const std::shared_ptr<Layer>& layer, const std::vector<Shape>& input_shapes) {
  if (!layer->built_) layer->dtype_ = dtype_;
  layer->build_for(input_shapes);
  add_sublayer(layer);
}

void Layer::add_sublayer(const std::shared_ptr<Layer>& layer) {
  if (std::find(sublayers_.begin(), sublayers_.end(), layer) != sublayers_.end()) return;
  sublayers_.push_back(layer);
  if (!trainable_) layer->set_trainable(false);  // a frozen layer's sublayers are frozen too
  for (const VariablePtr& w : layer->weights_)
    if (std::find(weights_.begin(), weights_.end(), w) == weights_.end()) weights_.push_back(w);
}

graph::Value Layer::emit(CallContext& ctx, const std::vector<graph::Value>& inputs) {
  TraceScope scope(ctx.g, &ctx, this, who());
  std::vector<Symbol> xs;
  for (graph::Value v : inputs) xs.push_back(scope.symbol(v));
  return scope.value(call(xs, ctx.training), "the output of call()");
}

std::vector<graph::Value> Layer::emit_outputs(CallContext& ctx, const std::vector<graph::Value>& inputs) {
  return {emit(ctx, inputs)};
}

std::vector<graph::Value> Layer::emit_output_masks(CallContext& ctx, const std::vector<graph::Value>&,
                                                   const std::vector<graph::Value>& outputs) {
  std::vector<graph::Value> out(outputs.size());
  const bool masked = std::any_of(ctx.input_masks.begin(), ctx.input_masks.end(), [](graph::Value m) { return m.valid(); });
  if (!masked) return out;
  if (!supports_masking())
    throw ValueError(who() + " cannot take a mask; its input comes from " + (ctx.mask_origin.empty() ? std::string("a masking layer") : ctx.mask_origin) +
                     ", which marks padded steps (Embedding(mask_zero=True) or Masking). Put a layer that consumes the mask first " +
                     "(GlobalAveragePooling1D, a recurrent layer) or make the mask unnecessary; a custom layer opts in by " +
                     "overriding supports_masking()");
  out[0] = ctx.input_mask(0);  // Keras: the first input's mask, on the first output
  return out;
}

Symbol Layer::call(const std::vector<Symbol>&, bool) {
  throw ValueError(who() + ": the layer does not compute anything; a custom layer must override call(inputs, training)");
}

}  // namespace tandem
