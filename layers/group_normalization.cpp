// GroupNormalization (Keras 3): the channels split into `groups` groups, each sample normalised over
// each group and every non-batch axis, then scaled and shifted per channel. Built from reshape,
// reduce_mean and elementwise ops, whose gradients and CUDA kernels it inherits.
#include <numeric>

#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct GroupNormalizationArgs {
  GroupNormalizationOptions options;
};

using O = GroupNormalizationOptions;
const Fields<GroupNormalizationArgs> kFields({
    field<GroupNormalizationArgs>("groups", [](auto& a) -> auto& { return a.options.groups; },
                                  [](int64_t g) { return g > 0 || g == -1 ? "" : "positive or -1 (one group per channel)"; }),
    field<GroupNormalizationArgs>("axis", [](auto& a) -> auto& { return a.options.axis; }),
    field<GroupNormalizationArgs>("epsilon", [](auto& a) -> auto& { return a.options.epsilon; }, rules::positive),
    field<GroupNormalizationArgs>("center", [](auto& a) -> auto& { return a.options.center; }),
    field<GroupNormalizationArgs>("scale", [](auto& a) -> auto& { return a.options.scale; }),
    initializer<GroupNormalizationArgs>("beta_initializer", [](auto& a) -> auto& { return a.options.beta_initializer; }),
    initializer<GroupNormalizationArgs>("gamma_initializer", [](auto& a) -> auto& { return a.options.gamma_initializer; }),
},
    weight_penalties<GroupNormalizationArgs>([](auto& a) -> auto& { return a.options; },
                             {{"beta", &O::beta_regularizer, &O::beta_constraint}, {"gamma", &O::gamma_regularizer, &O::gamma_constraint}}));

class GroupNormalizationLayer : public Layer {
 public:
  explicit GroupNormalizationLayer(GroupNormalizationArgs a) : Layer("group_normalization", a.options.name), args_(std::move(a)) {
    kFields.check(who(), args_);
    if (args_.options.axis == 0) throw ValueError(who() + ": axis 0 is the batch axis; expected the channel axis (-1: the last)");
  }
  std::string class_name() const override { return "GroupNormalization"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  void build(const std::vector<Shape>& in) override {
    const GroupNormalizationOptions& o = args_.options;
    if (in.size() != 1 || in[0].rank() < 1)
      throw ShapeError(who() + ": expected one input of rank >= 2 (batch included), got " +
                       (in.size() == 1 ? in[0].with_batch(-1).str() : std::to_string(in.size()) + " inputs"));
    const int rank = in[0].rank() + 1;
    axis_ = o.axis < 0 ? o.axis + rank : o.axis;
    if (axis_ <= 0 || axis_ >= rank)
      throw ValueError(who() + ": axis " + std::to_string(o.axis) + " is out of range for input " + in[0].with_batch(-1).str());
    channels_ = in[0][axis_ - 1];
    groups_ = o.groups == -1 ? channels_ : o.groups;
    if (channels_ < groups_ || channels_ % groups_ != 0)
      throw ValueError(who() + ": groups (" + std::to_string(groups_) + ") must divide the number of channels (" +
                       std::to_string(channels_) + ", axis " + std::to_string(o.axis) + " of input " + in[0].with_batch(-1).str() + ")");
    if (o.scale) gamma_ = add_weight("gamma", {channels_}, o.gamma_initializer, true, o.gamma_regularizer, o.gamma_constraint);
    if (o.center) beta_ = add_weight("beta", {channels_}, o.beta_initializer, true, o.beta_regularizer, o.beta_constraint);
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    graph::Graph& g = ctx.g;
    const TensorType t = g.type(inputs[0]);
    const Shape& x = t.shape;
    if (x.rank() <= axis_ || x[axis_] != channels_)
      throw ShapeError(who() + ": expected input with " + std::to_string(channels_) + " channels on axis " +
                       std::to_string(args_.options.axis) + ", got " + (x.rank() ? x.without_batch().with_batch(-1).str() : x.str()));
    // (N, ..., C, ...) -> (N, ..., G, C/G, ...); statistics over every axis but the batch and G ones.
    std::vector<int64_t> grouped = x.dims();
    grouped[static_cast<std::size_t>(axis_)] = channels_ / groups_;
    grouped.insert(grouped.begin() + axis_, groups_);
    std::vector<int64_t> axes;
    for (int i = 1; i < static_cast<int>(grouped.size()); ++i)
      if (i != axis_) axes.push_back(i);
    const graph::Value xg = ops::reshape(g, inputs[0], Shape(grouped));
    const graph::Value centred = ops::sub(g, xg, ops::reduce_mean(g, xg, axes, true));
    const graph::Value variance = ops::reduce_mean(g, ops::square(g, centred), axes, true);
    const graph::Value epsilon = ops::fill(g, {Shape{}, t.dtype}, args_.options.epsilon);
    const graph::Value normed = ops::div(g, centred, ops::sqrt(g, ops::add(g, variance, epsilon)));
    graph::Value y = ops::reshape(g, normed, x);
    // gamma and beta (C,) broadcast along the channel axis.
    std::vector<int64_t> per_channel(static_cast<std::size_t>(x.rank()), 1);
    per_channel[static_cast<std::size_t>(axis_)] = channels_;
    if (gamma_) y = ops::mul(g, y, ops::reshape(g, ctx.variable(*gamma_), Shape(per_channel)));
    if (beta_) y = ops::add(g, y, ops::reshape(g, ctx.variable(*beta_), Shape(per_channel)));
    return y;
  }

 private:
  GroupNormalizationArgs args_;
  int axis_ = -1;  // counted with the batch axis, non-negative once built
  int64_t channels_ = 0, groups_ = 0;
  VariablePtr gamma_, beta_;
};

const RegisterLayer registered("GroupNormalization", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<GroupNormalizationLayer>(kFields.read(c, {.options = {.name = c.name()}}));
});
}  // namespace

LayerRef GroupNormalization(const GroupNormalizationOptions& options) {
  return LayerRef(std::make_shared<GroupNormalizationLayer>(GroupNormalizationArgs{options}));
}

}  // namespace tandem::layers
