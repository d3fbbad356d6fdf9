// Lion (Keras 3): w −= lr·sign(β₁·m + (1−β₁)·g), then m = β₂·m + (1−β₂)·g. The step's direction
// mixes the gradient in with β₁, the momentum it keeps with β₂.
#include <nlohmann/json.hpp>

#include "graph/graph.h"
#include "tandem/errors.h"
#include "tandem/optimizers.h"

namespace tandem::optimizers {

namespace {
class LionOptimizer : public Optimizer {
 public:
  LionOptimizer(const LearningRate& lr, LionOptions o) : Optimizer(lr, o.clipping, o.weight_decay), o_(o) {
    // Keras refuses beta_1 <= 0: the momentum would never enter the step (sign SGD).
    if (!(o.beta_1 > 0 && o.beta_1 <= 1)) throw ValueError("Lion: beta_1 must be in (0, 1], got " + std::to_string(o.beta_1));
    if (!(o.beta_2 >= 0 && o.beta_2 <= 1)) throw ValueError("Lion: beta_2 must be in [0, 1], got " + std::to_string(o.beta_2));
  }
  std::string name() const override { return "lion"; }
  std::string config_json() const override {
    nlohmann::ordered_json c = nlohmann::ordered_json::parse(base_config_json());
    c.update({{"beta_1", o_.beta_1}, {"beta_2", o_.beta_2}});
    return c.dump();
  }

 protected:
  std::vector<std::string> slot_names() const override { return {"momentum"}; }
  void emit_update(graph::Graph& g, const graph::Value& var, const graph::Value& grad, const graph::Value& lr,
                   const graph::Value&, const std::vector<graph::Value>& slots, const std::vector<graph::Value>&) const override {
    g.add_multi("lion_update", {var, grad, lr, slots[0]}, {{"beta_1", o_.beta_1}, {"beta_2", o_.beta_2}});
  }

 private:
  LionOptions o_;
};
}  // namespace

OptimizerPtr Lion(const LearningRate& learning_rate, const LionOptions& options) {
  return std::make_shared<LionOptimizer>(learning_rate, options);
}

}  // namespace tandem::optimizers
