// BatchNormalization (Keras 3): in training, normalise with the batch statistics and move the
// moving statistics towards them; in inference, normalise with the moving statistics.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "ops/normalization.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct BatchNormalizationArgs {
  BatchNormalizationOptions options;
};

using O = BatchNormalizationOptions;
const Fields<BatchNormalizationArgs> kFields({
    field<BatchNormalizationArgs>("axis", [](auto& a) -> auto& { return a.options.axis; }),
    // Keras does not check momentum; outside [0, 1] the moving averages diverge, so say so early.
    field<BatchNormalizationArgs>("momentum", [](auto& a) -> auto& { return a.options.momentum; }, rules::in_range(0, 1, true)),
    field<BatchNormalizationArgs>("epsilon", [](auto& a) -> auto& { return a.options.epsilon; }, rules::positive),
    field<BatchNormalizationArgs>("center", [](auto& a) -> auto& { return a.options.center; }),
    field<BatchNormalizationArgs>("scale", [](auto& a) -> auto& { return a.options.scale; }),
    initializer<BatchNormalizationArgs>("beta_initializer", [](auto& a) -> auto& { return a.options.beta_initializer; }),
    initializer<BatchNormalizationArgs>("gamma_initializer", [](auto& a) -> auto& { return a.options.gamma_initializer; }),
    initializer<BatchNormalizationArgs>("moving_mean_initializer", [](auto& a) -> auto& { return a.options.moving_mean_initializer; }),
    initializer<BatchNormalizationArgs>("moving_variance_initializer",
                                        [](auto& a) -> auto& { return a.options.moving_variance_initializer; }),
    fixed<BatchNormalizationArgs>("synchronized", false),
    fixed<BatchNormalizationArgs>("renorm", false),
    unused<BatchNormalizationArgs>("renorm_clipping"),
    // Used only with renorm: written as Keras's default, any number accepted.
    Field<BatchNormalizationArgs>{"renorm_momentum", [](const BatchNormalizationArgs&) { return Json(0.99); },
                                  [](const ConfigReader& c, BatchNormalizationArgs&) { c.number("renorm_momentum", 0.99); }, nullptr},
},
    weight_penalties<BatchNormalizationArgs>([](auto& a) -> auto& { return a.options; },
                             {{"beta", &O::beta_regularizer, &O::beta_constraint}, {"gamma", &O::gamma_regularizer, &O::gamma_constraint}}));

class BatchNormalizationLayer : public Layer {
 public:
  explicit BatchNormalizationLayer(BatchNormalizationArgs a) : Layer("batch_normalization", a.options.name), args_(std::move(a)) {
    kFields.check(who(), args_);
    if (args_.options.axis == 0)
      throw ValueError(who() + ": axis 0 is the batch axis; expected the channel axis (-1 for channels last)");
  }
  std::string class_name() const override { return "BatchNormalization"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  void build(const std::vector<Shape>& in) override {
    const BatchNormalizationOptions& o = args_.options;
    if (in.size() != 1 || in[0].rank() < 1)
      throw ShapeError(who() + ": expected one input of rank >= 2 (batch included), got " +
                       (in.size() == 1 ? in[0].with_batch(-1).str() : std::to_string(in.size()) + " inputs"));
    rank_ = in[0].rank() + 1;
    const int axis = o.axis < 0 ? o.axis + rank_ : o.axis;
    if (axis <= 0 || axis >= rank_)
      throw ValueError(who() + ": axis " + std::to_string(o.axis) + " is out of range for input " + in[0].with_batch(-1).str() +
                       "; expected an axis in [1, " + std::to_string(rank_ - 1) + "] or [" + std::to_string(1 - rank_) + ", -1]");
    axis_ = axis;
    channels_ = in[0][axis - 1];
    const Shape shape{channels_};
    if (o.scale) gamma_ = add_weight("gamma", shape, o.gamma_initializer, true, o.gamma_regularizer, o.gamma_constraint);
    if (o.center) beta_ = add_weight("beta", shape, o.beta_initializer, true, o.beta_regularizer, o.beta_constraint);
    moving_mean_ = add_weight("moving_mean", shape, o.moving_mean_initializer, false);
    moving_variance_ = add_weight("moving_variance", shape, o.moving_variance_initializer, false);
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    graph::Graph& g = ctx.g;
    const graph::Value x = inputs[0];
    const TensorType& t = g.type(x);
    if (t.shape.rank() != rank_ || t.shape[axis_] != channels_)
      throw ShapeError(who() + ": expected input of rank " + std::to_string(rank_) + " with " + std::to_string(channels_) +
                       " channels on axis " + std::to_string(axis_) + ", got " + t.shape.without_batch().with_batch(-1).str());
    const TensorType per_channel{Shape{channels_}, t.dtype};
    const graph::Value gamma = gamma_ ? ctx.variable(*gamma_) : ops::fill(g, per_channel, 1.0);
    const graph::Value beta = beta_ ? ctx.variable(*beta_) : ops::fill(g, per_channel, 0.0);
    // Frozen (trainable false), it runs in inference mode in training too, as in Keras 3: fine-tuning
    // a base model must not move its statistics.
    if (!ctx.training || !trainable())
      return ops::batch_norm_infer(g, x, gamma, beta, ctx.variable(*moving_mean_), ctx.variable(*moving_variance_), axis_,
                                   args_.options.epsilon);
    const ops::BatchNormTrainResult r = ops::batch_norm_train(g, x, gamma, beta, axis_, args_.options.epsilon);
    // Keras 3 moves both statistics towards the batch's, the variance being the biased one. The
    // updates are Update-phase nodes, so they run after the step's forward and backward passes.
    const auto [mean, variance] = step_statistics(ctx, r);
    ops::assign_moving_average(g, ctx.variable(*moving_mean_), mean, args_.options.momentum);
    ops::assign_moving_average(g, ctx.variable(*moving_variance_), variance, args_.options.momentum);
    return r.y;
  }

  // The statistics of the step's whole batch. A step cut into micro-batches normalises each by its
  // own statistics (as GPipe does: the whole batch is never in memory at once), but the moving
  // statistics move once, towards the whole batch's (torchgpipe's deferred batch norm): its mean
  // is the mean of the micro-batches' equal-sized means, its biased variance E[x²] − mean², with
  // E[x²] the mean of each micro-batch's variance + mean².
  static std::pair<graph::Value, graph::Value> step_statistics(CallContext& ctx, const ops::BatchNormTrainResult& r) {
    if (ctx.micro_batches == 1) return {r.mean, r.variance};
    graph::Graph& g = ctx.g;
    const double share = 1.0 / ctx.micro_batches;
    const graph::Value mean = ops::micro_sum(g, ops::scale(g, r.mean, share));
    const graph::Value second_moment = ops::micro_sum(g, ops::scale(g, ops::add(g, r.variance, ops::square(g, r.mean)), share));
    graph::ScopeGuard phase(g, graph::Phase::Update);
    return {mean, ops::sub(g, second_moment, ops::square(g, mean))};
  }

 private:
  BatchNormalizationArgs args_;
  int rank_ = 0, axis_ = 0;
  int64_t channels_ = 0;
  VariablePtr gamma_, beta_, moving_mean_, moving_variance_;
};

const RegisterLayer registered("BatchNormalization", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<BatchNormalizationLayer>(kFields.read(c, {.options = {.name = c.name()}}));
});
}  // namespace

LayerRef BatchNormalization(const BatchNormalizationOptions& options) {
  return LayerRef(std::make_shared<BatchNormalizationLayer>(BatchNormalizationArgs{options}));
}

}  // namespace tandem::layers
