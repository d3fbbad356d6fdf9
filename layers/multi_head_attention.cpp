// MultiHeadAttention (Keras 3): per-head projections of query, key and value, scaled dot-product
// attention per head, and an output projection over all heads.
//
// The kernels keep Keras's per-head layouts, e.g. query/kernel (d, heads, key_dim); the graph reads
// them as plain matrices (d, heads·key_dim), which is the same memory, so a projection is one
// matmul. Heads then move next to the batch, (B, T, N, H) -> (B, N, T, H), for batch_matmul.
#include <algorithm>
#include <cmath>
#include <optional>

#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "ops/attention.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
using graph::Value;

struct MultiHeadAttentionArgs {
  int64_t num_heads = 0;
  int64_t key_dim = 0;
  MultiHeadAttentionOptions options;
  std::optional<uint64_t> seed;  // the dropout's; none: drawn from the global seed
};

const Fields<MultiHeadAttentionArgs> kFields({
    required<MultiHeadAttentionArgs>("num_heads", [](auto& a) -> auto& { return a.num_heads; }, rules::positive),
    required<MultiHeadAttentionArgs>("key_dim", [](auto& a) -> auto& { return a.key_dim; }, rules::positive),
    field<MultiHeadAttentionArgs>("value_dim", [](auto& a) -> auto& { return a.options.value_dim; },
                                  [](int64_t v) { return std::string(v >= 0 ? "" : "positive (or 0 for key_dim)"); }),
    field<MultiHeadAttentionArgs>("dropout", [](auto& a) -> auto& { return a.options.dropout; }, rules::in_range(0, 1, false)),
    field<MultiHeadAttentionArgs>("use_bias", [](auto& a) -> auto& { return a.options.use_bias; }),
    fixed<MultiHeadAttentionArgs>("use_gate", false),
    field<MultiHeadAttentionArgs>("output_shape", [](auto& a) -> auto& { return a.options.output_shape; }),
    // Tandem attends over the time axis of (batch, time, features): Keras's default (null) or [1],
    // which Keras computes when the layer is built (config_json writes it then).
    Field<MultiHeadAttentionArgs>{
        "attention_axes", [](const MultiHeadAttentionArgs&) { return Json(nullptr); },
        [](const ConfigReader& c, MultiHeadAttentionArgs&) {
          const Json* axes = c.value("attention_axes");
          if (axes && !axes->is_null() && *axes != Json::array({1}) && *axes != Json(1) && *axes != Json::array({-2}))
            c.fail("attention_axes",
                   "null or [1] (attention over the time axis of (batch, time, features), the only one Tandem implements)");
        },
        nullptr},
    unused<MultiHeadAttentionArgs>("sliding_window"),
    initializer<MultiHeadAttentionArgs>("kernel_initializer", [](auto& a) -> auto& { return a.options.kernel_initializer; }),
    initializer<MultiHeadAttentionArgs>("bias_initializer", [](auto& a) -> auto& { return a.options.bias_initializer; }),
    // Keras passes the causal mask at each call (a call argument in the model config), not to the
    // constructor; config_json writes it only when set, and Tandem's model configs move it there
    // (model/model_config.cpp).
    field<MultiHeadAttentionArgs>("use_causal_mask", [](auto& a) -> auto& { return a.options.use_causal_mask; }),
    field<MultiHeadAttentionArgs>("seed", [](auto& a) -> auto& { return a.seed; }),
},
    // Keras hands them to each projection (its EinsumDense sublayers); the activity regularizer is
    // not the layer's own (never set_activity_regularizer): emit applies it to each projection.
    kernel_bias_penalties<MultiHeadAttentionArgs>([](auto& a) -> auto& { return a.options; }, true));

class MultiHeadAttentionLayer : public Layer {
 public:
  // The dropout seed is drawn from the global seed unless given (a rebuilt layer keeps its old one).
  explicit MultiHeadAttentionLayer(MultiHeadAttentionArgs a) : Layer("multi_head_attention", a.options.name), args_(std::move(a)) {
    args_.seed = layer_seed(args_.seed);
    kFields.check(who(), args_);
    MultiHeadAttentionOptions& o = args_.options;
    for (int64_t d : o.output_shape.dims())
      if (d <= 0) throw ValueError(who() + ": output_shape must have positive dimensions, got " + o.output_shape.str());
    if (o.value_dim == 0) o.value_dim = args_.key_dim;
  }
  std::string class_name() const override { return "MultiHeadAttention"; }
  std::string config_json() const override {
    Json args = kFields.write(args_);
    if (built()) args["attention_axes"] = Json::array({1});  // the time axis of (batch, time, features)
    if (!args_.options.use_causal_mask) args.erase("use_causal_mask");
    return config_text(*this, args);
  }

  void build(const std::vector<Shape>& in) override {
    const MultiHeadAttentionOptions& o = args_.options;
    const int64_t num_heads = args_.num_heads, key_dim = args_.key_dim, value_dim = o.value_dim;
    check_inputs(in);
    const Shape &q = in[0], &v = in[1], &k = in.size() >= 3 ? in[2] : in[1];
    out_shape_ = o.output_shape.rank() ? o.output_shape : Shape{q.back()};
    // Keras's order: query, key, value, attention_output; kernel before bias in each.
    auto dense = [&](const std::string& name, Shape kernel, Shape bias) {
      Proj p{add_weight(name + "/kernel", std::move(kernel), o.kernel_initializer, true, o.kernel_regularizer, o.kernel_constraint),
             nullptr, name};
      if (o.use_bias) p.bias = add_weight(name + "/bias", std::move(bias), o.bias_initializer, true, o.bias_regularizer, o.bias_constraint);
      return p;
    };
    query_ = dense("query", {q.back(), num_heads, key_dim}, {num_heads, key_dim});
    key_ = dense("key", {k.back(), num_heads, key_dim}, {num_heads, key_dim});
    value_ = dense("value", {v.back(), num_heads, value_dim}, {num_heads, value_dim});
    std::vector<int64_t> okernel{num_heads, value_dim};
    for (int64_t d : out_shape_.dims()) okernel.push_back(d);
    output_ = dense("attention_output", Shape(okernel), out_shape_);
  }

  Value emit(CallContext& ctx, const std::vector<Value>& inputs) override {
    const MultiHeadAttentionOptions& o = args_.options;
    const int64_t num_heads = args_.num_heads, key_dim = args_.key_dim, value_dim = o.value_dim;
    std::vector<Shape> shapes;
    for (Value x : inputs) shapes.push_back(ctx.g.type(x).shape.without_batch());
    check_inputs(shapes);
    const Value query = inputs[0], value = inputs[1], key = inputs.size() >= 3 ? inputs[2] : inputs[1];
    check_features(ctx, query, query_, "query");
    check_features(ctx, key, key_, "key");
    check_features(ctx, value, value_, "value");
    graph::Graph& g = ctx.g;
    const int64_t t = g.type(query).shape[1];

    // (B, L, d) -> (B, N, L, size): projected, split into heads, heads next to the batch.
    auto project = [&](Value x, const Proj& p, int64_t size) {
      const Shape xs = g.type(x).shape;
      Value y = ops::matmul(g, x, ops::reshape(g, ctx.variable(*p.kernel), {xs[2], num_heads * size}));
      if (p.bias) y = ops::bias_add(g, y, ops::reshape(g, ctx.variable(*p.bias), {num_heads * size}));
      add_activity_penalty(ctx, y, p);
      y = ops::reshape(g, y, {xs[0], xs[1], num_heads, size});
      return ops::transpose(g, y, {0, 2, 1, 3});
    };
    // Keras scales the projected query, not the scores.
    const Value q = ops::scale(g, project(query, query_, key_dim), 1.0 / std::sqrt(double(key_dim)));
    const Value k = project(key, key_, key_dim);
    const Value v = project(value, value_, value_dim);

    Value scores = ops::batch_matmul(g, q, k, false, true);  // (B, N, T, S)
    if (o.use_causal_mask) scores = ops::causal_mask(g, scores, 0);
    const Value allowed = attention_mask(ctx, inputs);
    if (allowed.valid())  // Keras's masked softmax: hidden scores set very low, their weights then 0
      scores = ops::where(g, allowed, scores, ops::fill(g, g.type(scores), kHiddenScore));
    Value probs = ops::softmax(g, scores, -1);
    // A query that sees no key (a padded query) gets zero weights, not uniform ones, as in Keras.
    if (allowed.valid()) probs = ops::where(g, allowed, probs, ops::fill(g, g.type(probs), 0.0));
    if (ctx.training && o.dropout > 0.0) probs = ops::dropout(g, probs, ctx.step, o.dropout, *args_.seed);

    Value heads = ops::batch_matmul(g, probs, v);  // (B, N, T, Hv)
    const int64_t batch = g.type(heads).shape[0];
    heads = ops::reshape(g, ops::transpose(g, heads, {0, 2, 1, 3}), {batch, t, num_heads * value_dim});
    const int64_t out_size = out_shape_.num_elements();
    Value y = ops::matmul(g, heads, ops::reshape(g, ctx.variable(*output_.kernel), {num_heads * value_dim, out_size}));
    if (output_.bias) y = ops::bias_add(g, y, ops::reshape(g, ctx.variable(*output_.bias), {out_size}));
    add_activity_penalty(ctx, y, output_);
    std::vector<int64_t> dims{batch, t};
    for (int64_t d : out_shape_.dims()) dims.push_back(d);
    return ops::reshape(g, y, Shape(dims));
  }

  // An attention mask is the fourth input; saved files pass it as Keras does, `attention_mask=m`
  // after query, value and key (src/model/model_config.cpp).
  CallKeywordInputs keyword_inputs() const override { return {3, "attention_mask"}; }

  // The output's steps are the query's: its mask passes on (Keras).
  std::vector<Value> emit_output_masks(CallContext& ctx, const std::vector<Value>&, const std::vector<Value>&) override {
    return {ctx.input_mask(0)};
  }

 private:
  // What Keras adds to hidden scores (float32's large negative number).
  static constexpr double kHiddenScore = -1e9;

  // Which keys each query may see, from the inputs' masks (Keras's _compute_attention_mask):
  // query_mask[:, :, None] & value_mask[:, None, :] (& key_mask[:, None, :] when the key is its
  // own input), shaped (B, 1, T or 1, S or 1) to broadcast over the heads; invalid if no input
  // has a mask. The causal mask is applied to the scores before, by its own op.
  Value attention_mask(CallContext& ctx, const std::vector<Value>& inputs) const {
    graph::Graph& g = ctx.g;
    const DType dtype = g.type(inputs[0]).dtype;
    Value mask;
    auto add = [&](Value m, bool query) {
      if (!m.valid()) return;
      const Shape s = g.type(m).shape;
      if (s.rank() != 2)
        throw ShapeError(who() + ": expected masks of shape (batch, steps) on its inputs, got " + s.str());
      if (g.type(m).dtype != dtype) m = ops::cast(g, m, dtype);
      m = ops::reshape(g, m, query ? Shape{s[0], 1, s[1], 1} : Shape{s[0], 1, 1, s[1]});
      mask = mask.valid() ? ops::mul(g, mask, m) : m;
    };
    add(ctx.input_mask(0), true);
    add(ctx.input_mask(1), false);
    if (inputs.size() >= 3 && !(inputs[2] == inputs[1])) add(ctx.input_mask(2), false);
    if (inputs.size() == 4) {  // the explicit attention mask (batch, T, S): non-zero where a query may see a key
      const Shape s = g.type(inputs[3]).shape;
      const Value given = ops::compare(g, "not_equal", ops::cast(g, inputs[3], dtype), ops::fill(g, {Shape{}, dtype}, 0.0));
      const Value m = ops::reshape(g, given, Shape{s[0], 1, s[1], s[2]});
      mask = mask.valid() ? ops::mul(g, mask, m) : m;
    }
    return mask;
  }

  struct Proj {
    VariablePtr kernel, bias;
    std::string name;  // Keras's sublayer: "query", "key", "value", "attention_output"
  };

  // Keras's projections are EinsumDense sublayers given the activity regularizer: each adds its
  // output's penalty over the batch size (the same elements as its (B, L, N, H) output).
  void add_activity_penalty(CallContext& ctx, Value y, const Proj& p) const {
    ctx.add_activity_penalty(y, args_.options.activity_regularizer, who() + " (" + p.name + "): activity_regularizer");
  }

  // Shapes without the batch axis: (query, value[, key[, attention_mask]]), each (length,
  // features), the attention mask (query length, key length).
  void check_inputs(const std::vector<Shape>& in) const {
    if (in.size() < 2 || in.size() > 4)
      throw ValueError(who() + ": expected inputs {query, value}, {query, value, key} or {query, value, key, attention_mask}, got " +
                       std::to_string(in.size()) + " inputs");
    static const char* names[] = {"query", "value", "key"};
    if (in.size() == 4 && in[3] != Shape{in[0][0], in[1][0]})
      throw ShapeError(who() + ": expected attention_mask of shape " + Shape{in[0][0], in[1][0]}.with_batch(-1).str() +
                       " (query steps, key steps), got " + in[3].with_batch(-1).str());
    for (std::size_t i = 0; i < std::min<std::size_t>(in.size(), 3); ++i)
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
    // The weights' dtype, or the 16-bit compute dtype of a mixed policy (the casts follow the policy).
    if (ctx.g.type(x).dtype != p.kernel->value().dtype() && ctx.g.type(x).dtype != dtype_policy().compute_dtype())
      throw ShapeError(who() + ": expected " + what + " of dtype " + dtype_name(p.kernel->value().dtype()) + ", got " +
                       dtype_name(ctx.g.type(x).dtype));
  }

  MultiHeadAttentionArgs args_;
  Shape out_shape_;
  Proj query_, key_, value_, output_;
};

const RegisterLayer registered("MultiHeadAttention", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<MultiHeadAttentionLayer>(kFields.read(c, {.options = {.name = c.name()}}));
});
}  // namespace

LayerRef MultiHeadAttention(int64_t num_heads, int64_t key_dim, const MultiHeadAttentionOptions& options) {
  return LayerRef(std::make_shared<MultiHeadAttentionLayer>(MultiHeadAttentionArgs{num_heads, key_dim, options}));
}

}  // namespace tandem::layers
