// Optimizers with Keras 3's update rules and defaults.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tandem/layer.h"

namespace tandem {

namespace graph {
class Graph;
}

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual std::string name() const = 0;  // "adam"
  // The hyperparameters as a JSON object under Keras's names (Keras's get_config), the learning rate
  // being the current one: what Model::save stores. The base class has none and throws ValueError.
  virtual std::string config_json() const;
  double learning_rate() const;
  void set_learning_rate(double lr);     // takes effect at the next step
  int64_t iterations() const;            // updates applied so far
  // Every variable the optimizer owns: iterations, learning_rate, then slots in variable order.
  const std::vector<VariablePtr>& variables() const { return variables_; }

  // Library use: creates slots for these trainable variables (once), and emits one update per
  // variable into g, reading gradient grads[i] (graph values) for vars[i].
  void build(const std::vector<VariablePtr>& trainable);
  void emit_updates(graph::Graph& g, const std::vector<VariablePtr>& vars, const std::vector<graph::Value>& grads);

 protected:
  explicit Optimizer(double learning_rate);
  // Slot names per variable, e.g. {"momentum", "velocity"} for Adam (Keras's names).
  virtual std::vector<std::string> slot_names() const = 0;
  // Emits the update of `var` with gradient `grad`; slots[i] are this variable's slot values.
  virtual void emit_update(graph::Graph& g, const graph::Value& var, const graph::Value& grad, const graph::Value& lr,
                           const graph::Value& iteration, const std::vector<graph::Value>& slots) const = 0;

 private:
  std::vector<VariablePtr> variables_;
  std::vector<std::vector<VariablePtr>> slots_;  // per trainable variable, in build order
  std::vector<int> slot_owner_ids_;              // the trainable variable each slots_ entry belongs to
};
using OptimizerPtr = std::shared_ptr<Optimizer>;

namespace optimizers {

struct SGDOptions { double momentum = 0.0; bool nesterov = false; };
struct AdamOptions { double beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-7; };
struct AdamWOptions { double weight_decay = 0.004, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-7; };
struct RMSpropOptions { double rho = 0.9, momentum = 0.0, epsilon = 1e-7; };

OptimizerPtr SGD(double learning_rate = 0.01, const SGDOptions& options = {});
OptimizerPtr Adam(double learning_rate = 0.001, const AdamOptions& options = {});
OptimizerPtr AdamW(double learning_rate = 0.001, const AdamWOptions& options = {});
OptimizerPtr RMSprop(double learning_rate = 0.001, const RMSpropOptions& options = {});
// "sgd", "adam", "adamw", "rmsprop" with default arguments; ValueError for other names.
OptimizerPtr get(const std::string& name);

}  // namespace optimizers
}  // namespace tandem
