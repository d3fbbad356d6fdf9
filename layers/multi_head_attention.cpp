// MultiHeadAttention (Keras 3): per-head projections of query, key and value, scaled dot-product
// attention per head, and an output projection over all heads.
//
// The kernels keep Keras's per-head layouts, e.g. query/kernel (d, heads, key_dim); the graph reads
// them as plain matrices (d, heads·key_dim), which is the same memory, so a projection is one
// matmul. Heads then move next to the batch, (B, T, N, H) -> (B, N, T, H), for batch_matmul.
#include <cmath>
#include <optional>

#include "layer_base/call_context.h"
#include "layers/config.h"
#include "ops/attention.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
using graph::Value;

class MultiHeadAttentionLayer : public Layer {
 public:
  // The dropout seed is drawn from the global seed unless given (a rebuilt layer keeps its old one).
  MultiHeadAttentionLayer(int64_t num_heads, int64_t key_dim, MultiHeadAttentionOptions o, std::optional<uint64_t> seed = std::nullopt)
      : Layer("multi_head_attention", o.name), heads_(num_heads), key_dim_(key_dim), opts_(std::move(o)),
        seed_(layer_seed(seed)) {
    if (heads_ <= 0) throw ValueError(who() + ": num_heads must be positive, got " + std::to_string(heads_));
    if (key_dim_ <= 0) throw ValueError(who() + ": key_dim must be positive, got " + std::to_string(key_dim_));
    if (opts_.value_dim < 0) throw ValueError(who() + ": value_dim must be positive (or 0 for key_dim), got " + std::to_string(opts_.value_dim));
    value_dim_ = opts_.value_dim == 0 ? key_dim_ : opts_.value_dim;
    if (!(opts_.dropout >= 0.0 && opts_.dropout < 1.0))
      throw ValueError(who() + ": dropout must be in [0, 1), got " + std::to_string(opts_.dropout));
    for (int64_t d : opts_.output_shape.dims())
      if (d <= 0) throw ValueError(who() + ": output_shape must have positive dimensions, got " + opts_.output_shape.str());
  }
  std::string class_name() const override { return "MultiHeadAttention"; }
  std::string config_json() const override {
    // Keras computes attention_axes when the layer is built: the time axis of (batch, time, features).
    Json args{{"num_heads", heads_},
              {"key_dim", key_dim_},
              {"value_dim", value_dim_},
              {"dropout", opts_.dropout},
              {"use_bias", opts_.use_bias},
              {"use_gate", false},
              {"output_shape", opts_.output_shape.rank() ? Json(opts_.output_shape.dims()) : Json(nullptr)},
              {"attention_axes", built() ? Json::array({1}) : Json(nullptr)},
              {"sliding_window", nullptr},
              {"kernel_initializer", initializer_json(opts_.kernel_initializer)},
              {"bias_initializer", initializer_json(opts_.bias_initializer)}};
    // Keras passes the causal mask at each call (a call argument in the model config), not to the
    // constructor; Tandem's model configs move this key there (model/model_config.cpp).
    if (opts_.use_causal_mask) args["use_causal_mask"] = true;
    args["seed"] = seed_;
    return config_text(*this, args, {"kernel_regularizer", "bias_regularizer", "activity_regularizer", "kernel_constraint", "bias_constraint"});
  }

  void build(const std::vector<Shape>& in) override {
    check_inputs(in);
    const Shape &q = in[0], &v = in[1], &k = in.size() == 3 ? in[2] : in[1];
    out_shape_ = opts_.output_shape.rank() ? opts_.output_shape : Shape{q.back()};
    // Keras's order: query, key, value, attention_output; kernel before bias in each.
    auto dense = [&](const std::string& name, Shape kernel, Shape bias) {
      Proj p{add_weight(name + "/kernel", std::move(kernel), opts_.kernel_initializer), nullptr};
      if (opts_.use_bias) p.bias = add_weight(name + "/bias", std::move(bias), opts_.bias_initializer);
      return p;
    };
    query_ = dense("query", {q.back(), heads_, key_dim_}, {heads_, key_dim_});
    key_ = dense("key", {k.back(), heads_, key_dim_}, {heads_, key_dim_});
    value_ = dense("value", {v.back(), heads_, value_dim_}, {heads_, value_dim_});
    std::vector<int64_t> okernel{heads_, value_dim_};
    for (int64_t d : out_shape_.dims()) okernel.push_back(d);
    output_ = dense("attention_output", Shape(okernel), out_shape_);
  }

  Value emit(CallContext& ctx, const std::vector<Value>& inputs) override {
    std::vector<Shape> shapes;
    for (Value x : inputs) shapes.push_back(ctx.g.type(x).shape.without_batch());
    check_inputs(shapes);
    const Value query = inputs[0], value = inputs[1], key = inputs.size() == 3 ? inputs[2] : inputs[1];
    check_features(ctx, query, query_, "query");
    check_features(ctx, key, key_, "key");
    check_features(ctx, value, value_, "value");
    graph::Graph& g = ctx.g;
    const int64_t t = g.type(query).shape[1];

    // (B, L, d) -> (B, N, L, size): projected, split into heads, heads next to the batch.
    auto project = [&](Value x, const Proj& p, int64_t size) {
      const Shape xs = g.type(x).shape;
      Value y = ops::matmul(g, x, ops::reshape(g, ctx.variable(*p.kernel), {xs[2], heads_ * size}));
      if (p.bias) y = ops::bias_add(g, y, ops::reshape(g, ctx.variable(*p.bias), {heads_ * size}));
      y = ops::reshape(g, y, {xs[0], xs[1], heads_, size});
      return ops::transpose(g, y, {0, 2, 1, 3});
    };
    // Keras scales the projected query, not the scores.
    const Value q = ops::scale(g, project(query, query_, key_dim_), 1.0 / std::sqrt(double(key_dim_)));
    const Value k = project(key, key_, key_dim_);
    const Value v = project(value, value_, value_dim_);

    Value scores = ops::batch_matmul(g, q, k, false, true);  // (B, N, T, S)
    if (opts_.use_causal_mask) scores = ops::causal_mask(g, scores, 0);
    Value probs = ops::softmax(g, scores, -1);
    if (ctx.training && opts_.dropout > 0.0) probs = ops::dropout(g, probs, ctx.step, opts_.dropout, seed_);

    Value heads = ops::batch_matmul(g, probs, v);  // (B, N, T, Hv)
    const int64_t batch = g.type(heads).shape[0];
    heads = ops::reshape(g, ops::transpose(g, heads, {0, 2, 1, 3}), {batch, t, heads_ * value_dim_});
    const int64_t out_size = out_shape_.num_elements();
    Value y = ops::matmul(g, heads, ops::reshape(g, ctx.variable(*output_.kernel), {heads_ * value_dim_, out_size}));
    if (output_.bias) y = ops::bias_add(g, y, ops::reshape(g, ctx.variable(*output_.bias), {out_size}));
    std::vector<int64_t> dims{batch, t};
    for (int64_t d : out_shape_.dims()) dims.push_back(d);
    return ops::reshape(g, y, Shape(dims));
  }

 private:
  struct Proj {
    VariablePtr kernel, bias;
  };

  std::string who() const { return "MultiHeadAttention \"" + name() + "\""; }

  // Shapes without the batch axis: (query, value[, key]), each (length, features).
  void check_inputs(const std::vector<Shape>& in) const {
    if (in.size() != 2 && in.size() != 3)
      throw ValueError(who() + ": expected inputs {query, value} or {query, value, key}, got " + std::to_string(in.size()) +
                       " inputs");
    static const char* names[] = {"query", "value", "key"};
    for (std::size_t i = 0; i < in.size(); ++i)
      if (in[i].rank() != 2)
        throw ShapeError(who() + ": expected " + names[i] + " of rank 3 (batch, sequence, features), got " +
                         in[i].with_batch(-1).str());
    if (in.size() == 3 && in[1][0] != in[2][0])
      throw ShapeError(who() + ": value and key must have the same sequence length, got value " + in[1].with_batch(-1).str() +
                       " and key " + in[2].with_batch(-1).str());
  }

  void check_features(CallContext& ctx, Value x, const Proj& p, const char* what) const {
    const Shape s = ctx.g.type(x).shape;
    const int64_t want = p.kernel->value().shape()[0];
    if (s.back() != want)
      throw ShapeError(who() + ": expected " + what + " with last dimension " + std::to_string(want) + " (as when built), got " +
                       s.without_batch().with_batch(-1).str());
    if (ctx.g.type(x).dtype != p.kernel->value().dtype())
      throw ShapeError(who() + ": expected " + what + " of dtype " + dtype_name(p.kernel->value().dtype()) + ", got " +
                       dtype_name(ctx.g.type(x).dtype));
  }

  int64_t heads_, key_dim_, value_dim_ = 0;
  MultiHeadAttentionOptions opts_;
  uint64_t seed_;
  Shape out_shape_;
  Proj query_, key_, value_, output_;
};

const RegisterLayer registered("MultiHeadAttention", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  // Tandem attends over the time axis of (batch, time, features): Keras's default (null) or [1].
  const Json* axes = c.value("attention_axes");
  if (axes && !axes->is_null() && *axes != Json::array({1}) && *axes != Json(1) && *axes != Json::array({-2}))
    c.fail("attention_axes", "null or [1] (attention over the time axis of (batch, time, features), the only one Tandem implements)");
  c.expect("use_gate", false);
  c.expect_null({"sliding_window"});
  const int64_t key_dim = c.integer("key_dim");
  // Keras writes an int output_shape for a one-dimensional one.
  Shape output_shape;
  if (const Json* shape = c.value("output_shape"); shape && !shape->is_null())
    output_shape = shape->is_array() ? Shape(c.integers("output_shape")) : Shape{c.integer("output_shape")};
  return std::make_shared<MultiHeadAttentionLayer>(
      c.integer("num_heads"), key_dim,
      MultiHeadAttentionOptions{.value_dim = c.integer("value_dim", 0),
                                .dropout = c.number("dropout", 0.0),
                                .use_bias = c.boolean("use_bias", true),
                                .output_shape = output_shape,
                                .kernel_initializer = c.initializer("kernel_initializer", "glorot_uniform"),
                                .bias_initializer = c.initializer("bias_initializer", "zeros"),
                                .use_causal_mask = c.boolean("use_causal_mask", false),
                                .name = c.name()},
      c.seed("seed"));
});
}  // namespace

LayerRef MultiHeadAttention(int64_t num_heads, int64_t key_dim, const MultiHeadAttentionOptions& options) {
  return LayerRef(std::make_shared<MultiHeadAttentionLayer>(num_heads, key_dim, options));
}

}  // namespace tandem::layers
