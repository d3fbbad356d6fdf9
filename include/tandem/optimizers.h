// Optimizers with Keras 3's update rules and defaults.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tandem/layer.h"

namespace tandem {

namespace graph {
class Graph;
}

// A learning rate that changes with each update, as Keras's keras.optimizers.schedules: the rate of
// the update that follows `step` updates. fit sets it before every training step.
class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  virtual double operator()(int64_t step) const = 0;
  // {"module": "keras.optimizers.schedules", "class_name", "config", "registered_name"}, as Keras
  // serialises the schedule inside an optimizer's config.
  virtual std::string config_json() const = 0;
};
using SchedulePtr = std::shared_ptr<const LearningRateSchedule>;

// Keras's gradient clipping, applied to the gradients before the update; at most one is set.
//   clipnorm         each gradient rescaled to an L2 norm of at most this
//   global_clipnorm  all gradients rescaled together to a joint L2 norm of at most this
//   clipvalue        each gradient element clipped to [-clipvalue, clipvalue]
struct GradientClipping {
  std::optional<double> clipnorm{}, global_clipnorm{}, clipvalue{};
};

// What an optimizer's learning_rate argument takes: a number or a schedule.
struct LearningRate {
  LearningRate(double value) : value(value) {}
  LearningRate(SchedulePtr schedule);
  double value = 0;      // the rate (a schedule's rate at step 0)
  SchedulePtr schedule;  // empty for a constant rate
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual std::string name() const = 0;  // "adam"
  // The hyperparameters as a JSON object under Keras's names (Keras's get_config), the learning rate
  // being the current one: what Model::save stores. The base class has none and throws ValueError.
  virtual std::string config_json() const;
  virtual double learning_rate() const;
  // Takes effect at the next step. A ValueError when the rate follows a schedule.
  virtual void set_learning_rate(double lr);
  virtual const SchedulePtr& schedule() const { return schedule_; }  // empty for a constant rate
  virtual const GradientClipping& clipping() const { return clipping_; }
  // Library use: sets the rate a schedule gives for the update after `updates` updates; false (and
  // nothing changed) without a schedule.
  virtual bool follow_schedule(int64_t updates);
  virtual int64_t iterations() const;  // updates applied so far
  // Every variable the optimizer owns: iterations, learning_rate, the slots in variable order,
  // then the optimizer-wide state (Nadam's u_product). The first two are always the iteration
  // count and the learning rate of the updates.
  virtual const std::vector<VariablePtr>& variables() const { return variables_; }
  // Library use: the same variables in the order Keras's optimizer.variables lists them, for the
  // trainable `weights` in Keras's order (what a `.weights.h5` file stores): iteration,
  // learning_rate, the slots as the Keras class creates them, then the state. An Error when the
  // optimizer is built for other weights.
  virtual std::vector<VariablePtr> keras_variables(const std::vector<VariablePtr>& weights) const;

  // Library use: creates slots for these trainable variables (once), and emits one update per
  // variable into g, reading gradient grads[i] (graph values) for vars[i].
  virtual void build(const std::vector<VariablePtr>& trainable);
  virtual bool built() const { return built_; }  // build has run: the slots exist
  virtual void emit_updates(graph::Graph& g, const std::vector<VariablePtr>& vars, const std::vector<graph::Value>& grads);
  // Library use: the loss whose gradients emit_updates receives (the loss itself; a
  // LossScaleOptimizer's scaled loss).
  virtual graph::Value scale_loss(graph::Graph& g, const graph::Value& loss);
  // Library use: emit_updates whose every write (updates, state, iteration count) is skipped when
  // the float32 scalar `nonfinite` is not 0 at run time (a LossScaleOptimizer's skipped step).
  void emit_skippable_updates(graph::Graph& g, const std::vector<VariablePtr>& vars, const std::vector<graph::Value>& grads,
                              const graph::Value& nonfinite);

 protected:
  // `path`: where its variables' paths start ("optimizer/iteration").
  explicit Optimizer(const LearningRate& learning_rate, const GradientClipping& clipping = {},
                     std::optional<double> weight_decay = std::nullopt, const std::string& path = "optimizer");
  // The learning rate as it goes in config_json(): a number, or the schedule's Keras object.
  std::string learning_rate_config() const;
  // The config keys every Keras optimizer has: name, learning_rate, weight_decay and the clipping
  // (null when unset).
  std::string base_config_json() const;
  // Slot names per variable, e.g. {"momentum", "velocity"} for Adam (Keras's names).
  virtual std::vector<std::string> slot_names() const = 0;
  // What every slot starts at (Adagrad's initial_accumulator_value).
  virtual double slot_initial_value() const { return 0.0; }
  // Keras creates the slots of some classes in blocks (every velocity, then every momentum: RMSprop)
  // rather than weight by weight; only the order of keras_variables() depends on it.
  virtual bool keras_slot_blocks() const { return false; }
  // Optimizer-wide variables and their starting values, e.g. {{"u_product", 1.0}} for Nadam: made
  // at the first build, with the first trainable variable's dtype, as Keras makes them.
  virtual std::vector<std::pair<std::string, double>> state_variables() const { return {}; }
  // Emits the update of `var` with gradient `grad`; slots[i] are this variable's slot values,
  // state[i] the optimizer-wide variables' values before this step.
  virtual void emit_update(graph::Graph& g, const graph::Value& var, const graph::Value& grad, const graph::Value& lr,
                           const graph::Value& iteration, const std::vector<graph::Value>& slots,
                           const std::vector<graph::Value>& state) const = 0;
  // Emits the step's update of the optimizer-wide state; it runs after every variable's update.
  virtual void emit_state_update(graph::Graph&, const graph::Value& /*iteration*/, const std::vector<graph::Value>& /*state*/) const {}

 private:
  // The gradients after clipping (the same values when none is set).
  std::vector<graph::Value> clip(graph::Graph& g, const std::vector<graph::Value>& grads) const;
  std::vector<VariablePtr> variables_;
  std::vector<std::vector<VariablePtr>> slots_;  // per trainable variable, in build order
  std::vector<int> slot_owner_ids_;              // the trainable variable each slots_ entry belongs to
  std::vector<VariablePtr> state_;               // state_variables(), last in variables_
  SchedulePtr schedule_;
  GradientClipping clipping_;
  std::optional<double> weight_decay_;
  bool built_ = false;
};
using OptimizerPtr = std::shared_ptr<Optimizer>;

struct LossScaleOptions {
  double initial_scale = 32768.0;       // 2^15, Keras's default
  int64_t dynamic_growth_steps = 2000;  // finite steps in a row before the scale doubles
};

// Keras's LossScaleOptimizer: dynamic loss scaling for float16 training. The loss is multiplied by
// the scale before the backward pass, so that small gradients do not underflow float16, and the
// gradients are divided by it before the inner optimizer's update. A step whose gradients hold an
// inf or NaN (after the strategy has summed them) is skipped: no weight, slot or iteration count
// changes, the scale halves. After `dynamic_growth_steps` finite steps in a row it doubles.
// Model::compile wraps the optimizer in one when the model computes in float16 (a mixed_float16
// policy), as Keras does; fit then logs each epoch's skipped steps as "skipped_steps".
class LossScaleOptimizer final : public Optimizer {
 public:
  explicit LossScaleOptimizer(OptimizerPtr inner, const LossScaleOptions& options = {});
  const OptimizerPtr& inner_optimizer() const { return inner_; }
  const LossScaleOptions& options() const { return options_; }
  double dynamic_scale() const;   // the scale the next step uses (as of the last step's end)
  int64_t step_counter() const;   // finite steps since the scale last changed
  // Library use: Model::compile made it (for a float16 policy); a saved compile config then names
  // the inner optimizer, as Keras's does.
  bool made_by_compile = false;

  std::string name() const override { return "loss_scale_optimizer"; }
  std::string config_json() const override;  // {"name", "inner_optimizer", "initial_scale", "dynamic_growth_steps"}
  // The learning rate, its schedule, clipping and iterations are the inner optimizer's.
  double learning_rate() const override { return inner_->learning_rate(); }
  void set_learning_rate(double lr) override { inner_->set_learning_rate(lr); }
  const SchedulePtr& schedule() const override { return inner_->schedule(); }
  const GradientClipping& clipping() const override { return inner_->clipping(); }
  bool follow_schedule(int64_t updates) override { return inner_->follow_schedule(updates); }
  int64_t iterations() const override { return inner_->iterations(); }
  // The inner optimizer's variables, then step_counter, dynamic_scale and this wrapper's own
  // (unused) iteration and learning_rate, which Keras saves too.
  const std::vector<VariablePtr>& variables() const override { return all_; }
  // Keras's order: iteration, learning_rate, step_counter, dynamic_scale, then the inner's.
  std::vector<VariablePtr> keras_variables(const std::vector<VariablePtr>& weights) const override;
  void build(const std::vector<VariablePtr>& trainable) override;
  bool built() const override { return inner_->built(); }
  void emit_updates(graph::Graph& g, const std::vector<VariablePtr>& vars, const std::vector<graph::Value>& grads) override;
  graph::Value scale_loss(graph::Graph& g, const graph::Value& loss) override;

 protected:
  std::vector<std::string> slot_names() const override { return {}; }
  void emit_update(graph::Graph&, const graph::Value&, const graph::Value&, const graph::Value&, const graph::Value&,
                   const std::vector<graph::Value>&, const std::vector<graph::Value>&) const override {}

 private:
  OptimizerPtr inner_;
  LossScaleOptions options_;
  VariablePtr step_counter_, dynamic_scale_;
  std::vector<VariablePtr> all_;  // variables()
  void list_variables();          // remakes all_ after the inner optimizer has made slots
};

namespace optimizers {

// weight_decay (every optimizer, as in Keras 3): decoupled decay before each update,
// w −= w·weight_decay·learning_rate; unset (Keras's None) for all but AdamW.
struct SGDOptions { double momentum = 0.0; bool nesterov = false; std::optional<double> weight_decay{}; GradientClipping clipping{}; };
struct AdamOptions { double beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-7; std::optional<double> weight_decay{}; GradientClipping clipping{}; };
struct AdamWOptions { double weight_decay = 0.004, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-7; GradientClipping clipping{}; };
struct RMSpropOptions { double rho = 0.9, momentum = 0.0, epsilon = 1e-7; std::optional<double> weight_decay{}; GradientClipping clipping{}; };
struct AdagradOptions { double initial_accumulator_value = 0.1, epsilon = 1e-7; std::optional<double> weight_decay{}; GradientClipping clipping{}; };
struct NadamOptions { double beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-7; std::optional<double> weight_decay{}; GradientClipping clipping{}; };
struct AdamaxOptions { double beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-7; std::optional<double> weight_decay{}; GradientClipping clipping{}; };
struct LionOptions { double beta_1 = 0.9, beta_2 = 0.99; std::optional<double> weight_decay{}; GradientClipping clipping{}; };

OptimizerPtr SGD(const LearningRate& learning_rate = 0.01, const SGDOptions& options = {});
OptimizerPtr Adam(const LearningRate& learning_rate = 0.001, const AdamOptions& options = {});
OptimizerPtr AdamW(const LearningRate& learning_rate = 0.001, const AdamWOptions& options = {});
OptimizerPtr RMSprop(const LearningRate& learning_rate = 0.001, const RMSpropOptions& options = {});
OptimizerPtr Adagrad(const LearningRate& learning_rate = 0.001, const AdagradOptions& options = {});
OptimizerPtr Nadam(const LearningRate& learning_rate = 0.001, const NadamOptions& options = {});
OptimizerPtr Lion(const LearningRate& learning_rate = 0.001, const LionOptions& options = {});
// Adamax (Keras's): m += (g − m)(1 − β₁); u = max(β₂·u, |g|); w −= lr·m / ((1 − β₁ᵗ)(u + ε)), with
// the slots "momentum" and "norm" as Keras names them.
OptimizerPtr Adamax(const LearningRate& learning_rate = 0.001, const AdamaxOptions& options = {});
// "sgd", "adam", "adamw", "rmsprop", "adagrad", "nadam", "lion", "adamax" with default arguments; ValueError
// for other names.
OptimizerPtr get(const std::string& name);
// Library use: Keras's class name for an optimizer name ("adam" -> "Adam"; a user's own name
// unchanged), and the classes Tandem knows, as a list for messages.
std::string keras_class_name(const std::string& name);
std::string keras_class_names();
// Keras's keras.optimizers.LossScaleOptimizer(inner_optimizer, initial_scale, dynamic_growth_steps).
std::shared_ptr<tandem::LossScaleOptimizer> LossScaleOptimizer(OptimizerPtr inner_optimizer, const LossScaleOptions& options = {});

}  // namespace optimizers

namespace mixed_precision {
using optimizers::LossScaleOptimizer;  // keras.mixed_precision.LossScaleOptimizer
}  // namespace mixed_precision

// Keras 3's schedules, with its formulas and defaults (`optimizers::Adam(schedules::CosineDecay(...))`).
namespace schedules {

// initial · decay_rate^(step / decay_steps), the exponent floored when `staircase`.
SchedulePtr ExponentialDecay(double initial_learning_rate, int64_t decay_steps, double decay_rate, bool staircase = false);

struct CosineDecayOptions {
  double alpha = 0.0;                   // the final rate as a fraction of the decay's starting rate
  std::optional<double> warmup_target{}; // with warmup: the rate reached after warmup_steps
  int64_t warmup_steps = 0;
};
// Without warmup: initial · ((1 − alpha) · ½(1 + cos(π · min(step, decay_steps) / decay_steps)) + alpha).
// With warmup: a straight line from initial to warmup_target over warmup_steps, then the cosine
// decay from warmup_target over decay_steps.
SchedulePtr CosineDecay(double initial_learning_rate, int64_t decay_steps, const CosineDecayOptions& options = {});

// values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <= boundaries[i],
// values.back() after the last boundary; values has one more element than boundaries.
SchedulePtr PiecewiseConstantDecay(std::vector<int64_t> boundaries, std::vector<double> values);

}  // namespace schedules
}  // namespace tandem
