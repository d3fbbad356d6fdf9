// Variables, the Layer base class and symbolic calls.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <new>
#include <map>
#include <mutex>

#include "graph/graph.h"
#include "layer_base/call_context.h"
#include "layer_base/initializers.h"
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

VariablePtr Layer::add_weight(const std::string& name, Shape shape, const std::string& initializer, bool trainable) {
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
  weights_.push_back(v);
  return v;
}

void Layer::build_for(const std::vector<Shape>& input_shapes) {
  if (built_) return;
  build(input_shapes);
  built_ = true;
}

Symbol Layer::operator()(const Symbol& x) { return (*this)(std::vector<Symbol>{x}); }

std::string Layer::who() const { return class_name() + " \"" + name_ + "\""; }

Symbol Layer::operator()(const std::vector<Symbol>& xs) {
  if (const std::shared_ptr<Trace> trace = common_trace(xs, who())) return call_inside(trace, xs);
  std::vector<Shape> shapes;
  for (const Symbol& s : xs) shapes.push_back(s.shape().without_batch());
  take_dtype(xs);
  build_for(shapes);
  // The output shape comes from tracing this one call with a batch of 1 into a scratch graph.
  graph::Graph g;
  std::vector<graph::Value> ins;
  for (std::size_t i = 0; i < xs.size(); ++i)
    ins.push_back(g.placeholder("in" + std::to_string(i), {shapes[i].with_batch(1), xs[i].dtype()}));
  CallContext ctx(g, false, g.placeholder("step", {Shape{}, DType::I64}));
  graph::ScopeGuard scope(g, name_);
  const graph::Value y = emit(ctx, ins);
  auto node = std::make_shared<Symbol::Node>();
  node->layer = shared_from_this();
  node->inputs = xs;
  node->shape = g.type(y).shape;
  node->shape[0] = -1;
  node->dtype = g.type(y).dtype;
  return Symbol(node);
}

// A layer called inside another layer's call(): it is traced into the same graph at once, and
// becomes a sublayer of the caller, whose weights then include its weights.
Symbol Layer::call_inside(const std::shared_ptr<Trace>& trace, const std::vector<Symbol>& xs) {
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
  return traced_symbol(trace, emit(*trace->ctx, ins));
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
  for (const VariablePtr& w : layer->weights_)
    if (std::find(weights_.begin(), weights_.end(), w) == weights_.end()) weights_.push_back(w);
}

graph::Value Layer::emit(CallContext& ctx, const std::vector<graph::Value>& inputs) {
  TraceScope scope(ctx.g, &ctx, this, who());
  std::vector<Symbol> xs;
  for (graph::Value v : inputs) xs.push_back(scope.symbol(v));
  return scope.value(call(xs, ctx.training), "the output of call()");
}

Symbol Layer::call(const std::vector<Symbol>&, bool) {
  throw ValueError(who() + ": the layer does not compute anything; a custom layer must override call(inputs, training)");
}

}  // namespace tandem
