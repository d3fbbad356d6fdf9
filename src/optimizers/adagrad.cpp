// Adagrad (Keras 3): acc += g²; w −= lr·g/√(acc + ε). The accumulator starts at
// initial_accumulator_value and ε is inside the root, unlike PyTorch's g/(√acc + ε).
#include <nlohmann/json.hpp>

#include "graph/graph.h"
#include "tandem/errors.h"
#include "tandem/optimizers.h"

namespace tandem::optimizers {

namespace {
class AdagradOptimizer : public Optimizer {
 public:
  AdagradOptimizer(const LearningRate& lr, AdagradOptions o) : Optimizer(lr, o.clipping, o.weight_decay), o_(o) {
    if (!(o.initial_accumulator_value >= 0))
      throw ValueError("Adagrad: initial_accumulator_value must be >= 0, got " + std::to_string(o.initial_accumulator_value));
  }
  std::string name() const override { return "adagrad"; }
  std::string config_json() const override {
    nlohmann::ordered_json c = nlohmann::ordered_json::parse(base_config_json());
    c.update({{"initial_accumulator_value", o_.initial_accumulator_value}, {"epsilon", o_.epsilon}});
    return c.dump();
  }

 protected:
  std::vector<std::string> slot_names() const override { return {"accumulator"}; }
  double slot_initial_value() const override { return o_.initial_accumulator_value; }
  void emit_update(graph::Graph& g, const graph::Value& var, const graph::Value& grad, const graph::Value& lr,
                   const graph::Value&, const std::vector<graph::Value>& slots, const std::vector<graph::Value>&) const override {
    g.add_multi("adagrad_update", {var, grad, lr, slots[0]}, {{"epsilon", o_.epsilon}});
  }

 private:
  AdagradOptions o_;
};
}  // namespace

OptimizerPtr Adagrad(const LearningRate& learning_rate, const AdagradOptions& options) {
  return std::make_shared<AdagradOptimizer>(learning_rate, options);
}

}  // namespace tandem::optimizers
