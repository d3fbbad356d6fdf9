// The optimizer base: owns the iteration counter, the learning rate and the per-variable slots,
// and emits one fused update op per trainable variable.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "graph/graph.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/optimizers.h"

namespace tandem {

namespace {
Tensor filled(const Shape& shape, DType dtype, double value) {
  Tensor t(shape, dtype);
  if (value == 0.0) return t;
  if (dtype == DType::F64)
    for (double& x : t.values<double>()) x = value;
  else
    for (float& x : t.values<float>()) x = static_cast<float>(value);
  return t;
}
}  // namespace

std::vector<graph::Value> Optimizer::clip(graph::Graph& g, const std::vector<graph::Value>& grads) const {
  std::vector<graph::Value> out = grads;
  if (clipping_.global_clipnorm) {
    graph::Value total;
    for (const graph::Value& x : grads)
      if (x.valid()) total = total.valid() ? ops::add(g, total, ops::sum_of_squares(g, x)) : ops::sum_of_squares(g, x);
    for (graph::Value& x : out)
      if (x.valid()) x = ops::scale_by_norm(g, x, total, *clipping_.global_clipnorm);
    return out;
  }
  for (graph::Value& x : out) {
    if (!x.valid()) continue;
    if (clipping_.clipnorm) x = ops::scale_by_norm(g, x, ops::sum_of_squares(g, x), *clipping_.clipnorm);
    if (clipping_.clipvalue) x = ops::clip_by_value(g, x, *clipping_.clipvalue);
  }
  return out;
}

LearningRate::LearningRate(SchedulePtr s) : schedule(std::move(s)) {
  if (!schedule) throw ValueError("optimizer: the learning-rate schedule is empty");
  value = (*schedule)(0);
}

Optimizer::Optimizer(const LearningRate& rate, const GradientClipping& clipping, std::optional<double> weight_decay, const std::string& path)
    : schedule_(rate.schedule), clipping_(clipping), weight_decay_(weight_decay) {
  if (weight_decay && !(*weight_decay >= 0.0))
    throw ValueError("optimizer: weight_decay must be >= 0, got " + std::to_string(*weight_decay));
  const int set = clipping.clipnorm.has_value() + clipping.global_clipnorm.has_value() + clipping.clipvalue.has_value();
  if (set > 1) throw ValueError("optimizer: only one of clipnorm, global_clipnorm and clipvalue can be set");
  for (const auto& [name, v] : {std::pair{"clipnorm", clipping.clipnorm}, {"global_clipnorm", clipping.global_clipnorm}, {"clipvalue", clipping.clipvalue}})
    if (v && !(*v > 0.0)) throw ValueError(std::string("optimizer: ") + name + " must be > 0, got " + std::to_string(*v));
  const double learning_rate = rate.value;
  if (!(learning_rate >= 0.0)) throw ValueError("optimizer: learning_rate must be >= 0, got " + std::to_string(learning_rate));
  variables_.push_back(std::make_shared<Variable>(path + "/iteration", Tensor(Shape{}, DType::I64), false));
  Tensor lr(Shape{}, DType::F32);
  lr.data<float>()[0] = static_cast<float>(learning_rate);
  variables_.push_back(std::make_shared<Variable>(path + "/learning_rate", lr, false));
  for (const VariablePtr& v : variables_) v->set_optimizer_state();
}

std::string Optimizer::config_json() const {
  throw ValueError("optimizer \"" + name() + "\" has no config (it does not override config_json), so Model::save cannot store it");
}

double Optimizer::learning_rate() const { return variables_[1]->value().item(0); }
void Optimizer::set_learning_rate(double lr) {
  if (schedule_)
    throw ValueError("optimizer \"" + name() + "\": the learning rate follows a schedule, so it cannot be set (as in Keras); create the "
                     "optimizer with a number to set it from a callback");
  variables_[1]->value().data<float>()[0] = static_cast<float>(lr);
}

bool Optimizer::follow_schedule(int64_t updates) {
  if (!schedule_) return false;
  variables_[1]->value().data<float>()[0] = static_cast<float>((*schedule_)(updates));
  return true;
}

std::string Optimizer::base_config_json() const {
  auto number = [](const std::optional<double>& v) { return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr); };
  return nlohmann::ordered_json{{"name", name()},
                                {"learning_rate", nlohmann::ordered_json::parse(learning_rate_config())},
                                {"weight_decay", number(weight_decay_)},
                                {"clipnorm", number(clipping_.clipnorm)},
                                {"global_clipnorm", number(clipping_.global_clipnorm)},
                                {"clipvalue", number(clipping_.clipvalue)}}
      .dump();
}

std::string Optimizer::learning_rate_config() const {
  return schedule_ ? schedule_->config_json() : nlohmann::ordered_json(learning_rate()).dump();
}
int64_t Optimizer::iterations() const { return variables_[0]->value().data<int64_t>()[0]; }

void Optimizer::build(const std::vector<VariablePtr>& trainable) {
  const bool first = !built_;
  built_ = true;
  // Slots of weights built later go before the state, which stays last.
  variables_.resize(variables_.size() - state_.size());
  for (const VariablePtr& v : trainable) {
    if (std::find(slot_owner_ids_.begin(), slot_owner_ids_.end(), v->id()) != slot_owner_ids_.end()) continue;
    std::vector<VariablePtr> slots;
    for (const std::string& s : slot_names()) {
      const Tensor start = filled(v->value().shape(), v->value().dtype(), slot_initial_value());
      auto slot = std::make_shared<Variable>("optimizer/" + v->path() + "/" + s, start, false);
      slot->set_optimizer_state(v.get());
      slots.push_back(slot);
      variables_.push_back(slot);
    }
    slots_.push_back(std::move(slots));
    slot_owner_ids_.push_back(v->id());
  }
  if (first)
    for (const auto& [name, start] : state_variables()) {
      const DType dtype = trainable.empty() ? DType::F32 : trainable[0]->value().dtype();
      state_.push_back(std::make_shared<Variable>("optimizer/" + name, filled(Shape{}, dtype, start), false));
      state_.back()->set_optimizer_state();
    }
  variables_.insert(variables_.end(), state_.begin(), state_.end());
}

std::vector<VariablePtr> Optimizer::keras_variables(const std::vector<VariablePtr>& weights) const {
  std::vector<VariablePtr> out{variables_[0], variables_[1]};
  const std::size_t per = slot_names().size();
  if (!slots_.empty() && per > 0) {
    const std::string who = "optimizer \"" + name() + "\"";
    // Slots of weights frozen since are kept (unfreezing resumes them) but not listed, as Keras lists an
    // optimizer built on the trainable weights alone.
    std::vector<const std::vector<VariablePtr>*> of;  // of[j]: the slots of weights[j]
    for (const VariablePtr& w : weights) {
      const auto at = std::find(slot_owner_ids_.begin(), slot_owner_ids_.end(), w->id());
      if (at == slot_owner_ids_.end()) throw Error(who + ": has no slots for weight \"" + w->path() + "\"");
      of.push_back(&slots_[static_cast<std::size_t>(at - slot_owner_ids_.begin())]);
    }
    if (keras_slot_blocks()) {
      for (std::size_t s = 0; s < per; ++s)
        for (const auto* slots : of) out.push_back((*slots)[s]);
    } else {
      for (const auto* slots : of) out.insert(out.end(), slots->begin(), slots->end());
    }
  }
  out.insert(out.end(), state_.begin(), state_.end());
  return out;
}

graph::Value Optimizer::scale_loss(graph::Graph&, const graph::Value& loss) { return loss; }

void Optimizer::emit_updates(graph::Graph& g, const std::vector<VariablePtr>& vars, const std::vector<graph::Value>& grads) {
  emit_skippable_updates(g, vars, grads, {});
}

void Optimizer::emit_skippable_updates(graph::Graph& g, const std::vector<VariablePtr>& vars, const std::vector<graph::Value>& grads,
                                       const graph::Value& nonfinite) {
  build(vars);
  const int first = g.size();
  graph::ScopeGuard phase(g, graph::Phase::Update);
  graph::ScopeGuard scope(g, "optimizer", graph::Role::Optimizer);
  const graph::Value iteration = g.read_variable(*variables_[0]);
  const graph::Value lr = g.read_variable(*variables_[1]);
  const std::vector<graph::Value> clipped = clip(g, grads);
  std::vector<graph::Value> state;
  for (const VariablePtr& s : state_) state.push_back(g.read_variable(*s));
  std::vector<int> updates;
  for (std::size_t i = 0; i < vars.size(); ++i) {
    if (!clipped[i].valid()) continue;  // the variable does not affect the loss
    const auto at = std::find(slot_owner_ids_.begin(), slot_owner_ids_.end(), vars[i]->id()) - slot_owner_ids_.begin();
    std::vector<graph::Value> slots;
    for (const VariablePtr& s : slots_[static_cast<std::size_t>(at)]) slots.push_back(g.read_variable(*s));
    const int before = g.size();
    emit_update(g, g.read_variable(*vars[i]), clipped[i], lr, iteration, slots, state);
    for (int n = before; n < g.size(); ++n) {
      updates.push_back(n);
      // Every update kernel decays its variable first when the attr is set.
      if (weight_decay_ && g.node(n).op.ends_with("_update")) g.node(n).attrs.set("weight_decay", *weight_decay_);
    }
  }
  // The updates read the state and the iteration count as they were before this step: the
  // state advances after all of them, and the count after that.
  const int before = g.size();
  emit_state_update(g, iteration, state);
  for (int n = before; n < g.size(); ++n) g.node(n).after = updates;
  for (int n = before; n < g.size(); ++n) updates.push_back(n);
  g.add_multi("increment", {iteration});
  g.node(g.size() - 1).after = updates;
  // Every node that writes a variable takes the flag as one more input, last (the kernels'
  // "skippable" attr): its kernel does nothing when the flag is not 0.
  if (nonfinite.valid())
    for (int n = first; n < g.size(); ++n)
      if (!g.node(n).def->writes_inputs.empty()) {
        g.node(n).inputs.push_back(nonfinite);
        g.node(n).attrs.set("skippable", true);
      }
}

}  // namespace tandem
