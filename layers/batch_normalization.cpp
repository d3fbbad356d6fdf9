// BatchNormalization (Keras 3): in training, normalise with the batch statistics and move the
// moving statistics towards them; in inference, normalise with the moving statistics.
#include <sstream>

#include "layer_base/call_context.h"
#include "layers/config.h"
#include "ops/normalization.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

class BatchNormalizationLayer : public Layer {
 public:
  explicit BatchNormalizationLayer(BatchNormalizationOptions o) : Layer("batch_normalization", o.name), opts_(std::move(o)) {
    if (!(opts_.epsilon > 0.0)) throw ValueError(who() + ": epsilon must be positive, got " + number(opts_.epsilon));
    // Keras does not check momentum; outside [0, 1] the moving averages diverge, so say so early.
    if (!(opts_.momentum >= 0.0 && opts_.momentum <= 1.0))
      throw ValueError(who() + ": momentum must be in [0, 1], got " + number(opts_.momentum));
    if (opts_.axis == 0) throw ValueError(who() + ": axis 0 is the batch axis; expected the channel axis (-1 for channels last)");
  }
  std::string class_name() const override { return "BatchNormalization"; }
  std::string config_json() const override {
    return config_text(*this, {{"axis", opts_.axis},
                               {"momentum", opts_.momentum},
                               {"epsilon", opts_.epsilon},
                               {"center", opts_.center},
                               {"scale", opts_.scale},
                               {"beta_initializer", initializer_json(opts_.beta_initializer)},
                               {"gamma_initializer", initializer_json(opts_.gamma_initializer)},
                               {"moving_mean_initializer", initializer_json(opts_.moving_mean_initializer)},
                               {"moving_variance_initializer", initializer_json(opts_.moving_variance_initializer)},
                               {"synchronized", false},
                               {"renorm", false},
                               {"renorm_clipping", nullptr},
                               {"renorm_momentum", 0.99}},
                       {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"});
  }

  void build(const std::vector<Shape>& in) override {
    if (in.size() != 1 || in[0].rank() < 1)
      throw ShapeError(who() + ": expected one input of rank >= 2 (batch included), got " +
                       (in.size() == 1 ? in[0].with_batch(-1).str() : std::to_string(in.size()) + " inputs"));
    rank_ = in[0].rank() + 1;
    const int axis = opts_.axis < 0 ? opts_.axis + rank_ : opts_.axis;
    if (axis <= 0 || axis >= rank_)
      throw ValueError(who() + ": axis " + std::to_string(opts_.axis) + " is out of range for input " + in[0].with_batch(-1).str() +
                       "; expected an axis in [1, " + std::to_string(rank_ - 1) + "] or [" + std::to_string(1 - rank_) + ", -1]");
    axis_ = axis;
    channels_ = in[0][axis - 1];
    const Shape shape{channels_};
    if (opts_.scale) gamma_ = add_weight("gamma", shape, opts_.gamma_initializer, true);
    if (opts_.center) beta_ = add_weight("beta", shape, opts_.beta_initializer, true);
    moving_mean_ = add_weight("moving_mean", shape, opts_.moving_mean_initializer, false);
    moving_variance_ = add_weight("moving_variance", shape, opts_.moving_variance_initializer, false);
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
    if (!ctx.training)
      return ops::batch_norm_infer(g, x, gamma, beta, ctx.variable(*moving_mean_), ctx.variable(*moving_variance_), axis_,
                                   opts_.epsilon);
    const ops::BatchNormTrainResult r = ops::batch_norm_train(g, x, gamma, beta, axis_, opts_.epsilon);
    // Keras 3 moves both statistics towards the batch's, the variance being the biased one. The
    // updates are Update-phase nodes, so they run after the step's forward and backward passes.
    const auto [mean, variance] = step_statistics(ctx, r);
    ops::assign_moving_average(g, ctx.variable(*moving_mean_), mean, opts_.momentum);
    ops::assign_moving_average(g, ctx.variable(*moving_variance_), variance, opts_.momentum);
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
  std::string who() const { return "BatchNormalization \"" + name() + "\""; }

  BatchNormalizationOptions opts_;
  int rank_ = 0, axis_ = 0;
  int64_t channels_ = 0;
  VariablePtr gamma_, beta_, moving_mean_, moving_variance_;
};

const RegisterLayer registered("BatchNormalization", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  c.expect("synchronized", false);
  c.expect("renorm", false);
  c.expect_null({"renorm_clipping"});
  c.number("renorm_momentum", 0.99);  // used only with renorm
  const BatchNormalizationOptions d;
  return std::make_shared<BatchNormalizationLayer>(BatchNormalizationOptions{
      .axis = static_cast<int>(c.integer("axis", d.axis)),
      .momentum = c.number("momentum", d.momentum),
      .epsilon = c.number("epsilon", d.epsilon),
      .center = c.boolean("center", d.center),
      .scale = c.boolean("scale", d.scale),
      .beta_initializer = c.initializer("beta_initializer", d.beta_initializer),
      .gamma_initializer = c.initializer("gamma_initializer", d.gamma_initializer),
      .moving_mean_initializer = c.initializer("moving_mean_initializer", d.moving_mean_initializer),
      .moving_variance_initializer = c.initializer("moving_variance_initializer", d.moving_variance_initializer),
      .name = c.name()});
});
}  // namespace

LayerRef BatchNormalization(const BatchNormalizationOptions& options) {
  return LayerRef(std::make_shared<BatchNormalizationLayer>(options));
}

}  // namespace tandem::layers
