// Dot: the batchwise dot product of two inputs along one axis of each (Keras's batch_dot), as a
// transpose and reshape of each input around one batched matrix product.
#include <nlohmann/json.hpp>

#include "layer_base/call_context.h"
#include "layers/config.h"
#include "ops/attention.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct DotArgs {
  std::vector<int64_t> axes;  // one axis for both inputs, or one per input
  DotOptions options;
};

std::string axes_str(const std::vector<int64_t>& axes) {
  if (axes.size() == 1) return std::to_string(axes[0]);
  return std::string("(").append(std::to_string(axes[0])).append(", ").append(std::to_string(axes[1])).append(")");
}

// x · min(1/√Σx², 1/ε) along `axis`: Keras's L2 normalize (ops.nn.normalize, ε = 1e-7).
graph::Value l2_normalize(graph::Graph& g, graph::Value x, int64_t axis) {
  const DType dtype = g.type(x).dtype;
  const graph::Value inv = ops::div(g, ops::fill(g, {Shape{}, dtype}, 1.0), ops::sqrt(g, ops::reduce_sum(g, ops::square(g, x), {axis}, true)));
  return ops::mul(g, x, ops::minimum(g, inv, ops::fill(g, {Shape{}, dtype}, 1e7)));
}

// x with `axis` moved first (front) or last (!front) among the non-batch axes, then flattened to
// (batch, rest, d) or (batch, d, rest).
graph::Value to_matrix(graph::Graph& g, graph::Value x, int64_t axis, bool last, std::vector<int64_t>& rest_dims) {
  const Shape s = g.type(x).shape;
  std::vector<int64_t> perm{0};
  int64_t rest = 1;
  if (!last) perm.push_back(axis);
  for (int64_t i = 1; i < s.rank(); ++i)
    if (i != axis) perm.push_back(i), rest *= s[static_cast<int>(i)], rest_dims.push_back(s[static_cast<int>(i)]);
  if (last) perm.push_back(axis);
  const int64_t d = s[static_cast<int>(axis)];
  bool identity = true;
  for (std::size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  const graph::Value t = identity ? x : ops::transpose(g, x, perm);
  return ops::reshape(g, t, last ? Shape{s[0], rest, d} : Shape{s[0], d, rest});
}

class DotLayer : public Layer {
 public:
  explicit DotLayer(DotArgs a) : Layer("dot", a.options.name), args_(std::move(a)) {
    if (args_.axes.empty() || args_.axes.size() > 2)
      throw ValueError(who() + ": axes must be one integer or two, got " + std::to_string(args_.axes.size()) + " values");
  }
  std::string class_name() const override { return "Dot"; }
  std::string config_json() const override {
    Json args = Json::object();
    args["axes"] = args_.axes.size() == 1 ? Json(args_.axes[0]) : Json(args_.axes);
    args["normalize"] = args_.options.normalize;
    return config_text(*this, args);
  }

  void build(const std::vector<Shape>& in) override {
    if (in.size() != 2) throw ValueError(who() + ": a Dot layer takes exactly 2 inputs, got " + std::to_string(in.size()));
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    graph::Graph& g = ctx.g;
    const TensorType ta = g.type(inputs[0]), tb = g.type(inputs[1]);
    const std::string shapes =
        std::string("[").append(ta.shape.without_batch().with_batch(-1).str()).append(", ").append(tb.shape.without_batch().with_batch(-1).str()).append("]");
    if (ta.dtype != tb.dtype) throw ShapeError(who() + ": inputs must share a dtype, got " + dtype_name(ta.dtype) + " and " + dtype_name(tb.dtype));
    // Keras: a negative axis counts from the end of its own input; the batch axis is 0.
    int64_t axis[2];
    const int64_t rank[2] = {ta.shape.rank(), tb.shape.rank()};
    for (int i = 0; i < 2; ++i) {
      const int64_t given = args_.axes[args_.axes.size() == 1 ? 0 : static_cast<std::size_t>(i)];
      axis[i] = given < 0 ? given + rank[i] : given;
      if (axis[i] < 1 || axis[i] >= rank[i])
        throw ValueError(who() + ": axes " + axes_str(args_.axes) + " out of range for inputs " + shapes +
                         (axis[i] == 0 ? " (the batch axis cannot be reduced)" : ""));
    }
    if (ta.shape[static_cast<int>(axis[0])] != tb.shape[static_cast<int>(axis[1])])
      throw ShapeError(who() + ": incompatible input shapes " + shapes + std::string(": axis ").append(std::to_string(axis[0])) +
                       std::string(" of the first has ").append(std::to_string(ta.shape[static_cast<int>(axis[0])])) +
                       std::string(" values, axis ").append(std::to_string(axis[1])) +
                       std::string(" of the second ").append(std::to_string(tb.shape[static_cast<int>(axis[1])])));
    graph::Value a = inputs[0], b = inputs[1];
    if (args_.options.normalize) a = l2_normalize(g, a, axis[0]), b = l2_normalize(g, b, axis[1]);
    std::vector<int64_t> out{ta.shape[0]};
    const graph::Value am = to_matrix(g, a, axis[0], true, out);
    const graph::Value bm = to_matrix(g, b, axis[1], false, out);
    if (out.size() == 1) out.push_back(1);  // two vectors per row: (batch, 1), as Keras
    return ops::reshape(g, ops::batch_matmul(g, am, bm), Shape(out));
  }

 private:
  DotArgs args_;
};

const RegisterLayer registered("Dot", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  DotArgs a{.options = {.normalize = c.boolean("normalize", false), .name = c.name()}};
  const Json* axes = c.value("axes");
  if (axes && axes->is_number_integer()) a.axes = {axes->get<int64_t>()};
  else if (axes && axes->is_array() && axes->size() == 2 && (*axes)[0].is_number_integer() && (*axes)[1].is_number_integer())
    a.axes = {(*axes)[0].get<int64_t>(), (*axes)[1].get<int64_t>()};
  else c.fail("axes", "an integer or a list of two integers");
  return std::make_shared<DotLayer>(std::move(a));
});
}  // namespace

LayerRef Dot(std::vector<int64_t> axes, const DotOptions& options) {
  return LayerRef(std::make_shared<DotLayer>(DotArgs{std::move(axes), options}));
}

}  // namespace tandem::layers
