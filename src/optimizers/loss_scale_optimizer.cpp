// Keras's LossScaleOptimizer: the loss scaled before the backward pass, the gradients unscaled and
// checked for inf/NaN after the strategy has summed them, and the inner optimizer's writes skipped
// on the device when the check fails, so a step never needs a decision on the host.
#include <cmath>

#include <nlohmann/json.hpp>

#include "graph/graph.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/optimizers.h"

namespace tandem {

namespace {
constexpr const char* kPath = "optimizer/loss_scale_optimizer";

Tensor scalar(DType dtype, double value) {
  Tensor t(Shape{}, dtype);
  if (dtype == DType::I64) t.data<int64_t>()[0] = static_cast<int64_t>(value);
  else t.data<float>()[0] = static_cast<float>(value);
  return t;
}
}  // namespace

LossScaleOptimizer::LossScaleOptimizer(OptimizerPtr inner, const LossScaleOptions& options)
    : Optimizer(0.0, {}, std::nullopt, kPath), inner_(std::move(inner)), options_(options) {
  if (!inner_) throw ValueError("LossScaleOptimizer: inner_optimizer is empty");
  if (dynamic_cast<const LossScaleOptimizer*>(inner_.get()))
    throw ValueError("LossScaleOptimizer: inner_optimizer is already a LossScaleOptimizer; wrap the optimizer once");
  if (!(std::isfinite(options.initial_scale) && options.initial_scale > 0.0))
    throw ValueError("LossScaleOptimizer: initial_scale must be a finite number > 0, got " + std::to_string(options.initial_scale));
  if (options.dynamic_growth_steps < 1)
    throw ValueError("LossScaleOptimizer: dynamic_growth_steps must be >= 1, got " + std::to_string(options.dynamic_growth_steps));
  step_counter_ = std::make_shared<Variable>(std::string(kPath) + "/step_counter", scalar(DType::I64, 0), false);
  dynamic_scale_ = std::make_shared<Variable>(std::string(kPath) + "/dynamic_scale", scalar(DType::F32, options.initial_scale), false);
  step_counter_->set_optimizer_state();
  dynamic_scale_->set_optimizer_state();
  list_variables();
}

double LossScaleOptimizer::dynamic_scale() const { return dynamic_scale_->value().item(0); }
int64_t LossScaleOptimizer::step_counter() const { return step_counter_->value().data<int64_t>()[0]; }

std::string LossScaleOptimizer::config_json() const {
  const nlohmann::ordered_json inner{{"module", "keras.optimizers"},
                                     {"class_name", optimizers::keras_class_name(inner_->name())},
                                     {"config", nlohmann::ordered_json::parse(inner_->config_json())},
                                     {"registered_name", nullptr}};
  return nlohmann::ordered_json{{"name", name()},
                                {"inner_optimizer", inner},
                                {"initial_scale", options_.initial_scale},
                                {"dynamic_growth_steps", options_.dynamic_growth_steps}}
      .dump();
}

void LossScaleOptimizer::build(const std::vector<VariablePtr>& trainable) {
  inner_->build(trainable);
  list_variables();
}

void LossScaleOptimizer::list_variables() {
  all_ = inner_->variables();
  const std::vector<VariablePtr>& own = Optimizer::variables();
  all_.insert(all_.end(), {step_counter_, dynamic_scale_, own[0], own[1]});
}

std::vector<VariablePtr> LossScaleOptimizer::keras_variables(const std::vector<VariablePtr>& weights) const {
  const std::vector<VariablePtr>& own = Optimizer::variables();
  std::vector<VariablePtr> out{own[0], own[1], step_counter_, dynamic_scale_};
  const std::vector<VariablePtr> inner = inner_->keras_variables(weights);
  out.insert(out.end(), inner.begin(), inner.end());
  return out;
}

graph::Value LossScaleOptimizer::scale_loss(graph::Graph& g, const graph::Value& loss) {
  graph::Value scale = g.read_variable(*dynamic_scale_);
  if (g.type(loss).dtype != DType::F32) scale = ops::cast(g, scale, g.type(loss).dtype);
  return ops::mul(g, loss, scale);
}

void LossScaleOptimizer::emit_updates(graph::Graph& g, const std::vector<VariablePtr>& vars, const std::vector<graph::Value>& grads) {
  build(vars);
  graph::ScopeGuard phase(g, graph::Phase::Update);
  graph::ScopeGuard scope(g, "loss_scale_optimizer", graph::Role::Optimizer);
  const graph::Value scale = g.read_variable(*dynamic_scale_);
  std::vector<graph::Value> unscaled(grads.size());
  graph::Value nonfinite;  // 1 when any gradient holds an inf or NaN
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].valid()) continue;
    const auto [u, bad] = ops::unscale_gradient(g, grads[i], scale);
    unscaled[i] = u;
    nonfinite = nonfinite.valid() ? ops::maximum(g, nonfinite, bad) : bad;
  }
  if (!nonfinite.valid()) nonfinite = ops::fill(g, {Shape{}, DType::F32}, 0.0);
  inner_->emit_skippable_updates(g, vars, unscaled, nonfinite);
  ops::loss_scale_update(g, scale, g.read_variable(*step_counter_), nonfinite, options_.dynamic_growth_steps);
}

namespace optimizers {
std::shared_ptr<tandem::LossScaleOptimizer> LossScaleOptimizer(OptimizerPtr inner_optimizer, const LossScaleOptions& options) {
  return std::make_shared<tandem::LossScaleOptimizer>(std::move(inner_optimizer), options);
}
}  // namespace optimizers

}  // namespace tandem
