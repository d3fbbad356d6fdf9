// Adamax (Keras 3): t = iterations + 1; m += (g − m)(1 − β₁); u = max(β₂·u, |g|);
// w −= lr·m / ((1 − β₁ᵗ)(u + ε)). The slots are Keras's "momentum" and "norm".
#include <nlohmann/json.hpp>

#include "graph/graph.h"
#include "tandem/errors.h"
#include "tandem/optimizers.h"

namespace tandem::optimizers {

namespace {
class AdamaxOptimizer : public Optimizer {
 public:
  AdamaxOptimizer(const LearningRate& lr, AdamaxOptions o) : Optimizer(lr, o.clipping, o.weight_decay), o_(o) {
    if (!(o.beta_1 >= 0 && o.beta_1 < 1)) throw ValueError("Adamax: beta_1 must be in [0, 1), got " + std::to_string(o.beta_1));
    if (!(o.beta_2 >= 0 && o.beta_2 <= 1)) throw ValueError("Adamax: beta_2 must be in [0, 1], got " + std::to_string(o.beta_2));
    if (!(o.epsilon >= 0)) throw ValueError("Adamax: epsilon must be >= 0, got " + std::to_string(o.epsilon));
  }
  std::string name() const override { return "adamax"; }
  std::string config_json() const override {
    nlohmann::ordered_json c = nlohmann::ordered_json::parse(base_config_json());
    c.update({{"beta_1", o_.beta_1}, {"beta_2", o_.beta_2}, {"epsilon", o_.epsilon}});
    return c.dump();
  }

 protected:
  std::vector<std::string> slot_names() const override { return {"momentum", "norm"}; }
  void emit_update(graph::Graph& g, const graph::Value& var, const graph::Value& grad, const graph::Value& lr,
                   const graph::Value& iteration, const std::vector<graph::Value>& slots, const std::vector<graph::Value>&) const override {
    g.add_multi("adamax_update", {var, grad, lr, iteration, slots[0], slots[1]},
                {{"beta_1", o_.beta_1}, {"beta_2", o_.beta_2}, {"epsilon", o_.epsilon}});
  }

 private:
  AdamaxOptions o_;
};
}  // namespace

OptimizerPtr Adamax(const LearningRate& learning_rate, const AdamaxOptions& options) {
  return std::make_shared<AdamaxOptimizer>(learning_rate, options);
}

}  // namespace tandem::optimizers
