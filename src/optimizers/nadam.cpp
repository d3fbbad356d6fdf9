// Nadam (Keras 3): Adam with Nesterov momentum and Dozat's momentum schedule. With t = iterations
// + 1 and μₜ = β₁(1 − ½·0.96ᵗ), the optimizer-wide u_product (the product of every μ so far) is
// Πₜ = Πₜ₋₁·μₜ. Then m += (g−m)(1−β₁); v += (g²−v)(1−β₂);
// m̂ = μₜ₊₁·m/(1 − Πₜ·μₜ₊₁) + (1−μₜ)·g/(1 − Πₜ); v̂ = v/(1−β₂ᵗ); w −= lr·m̂/(√v̂ + ε).
// PyTorch's NAdam is the same rule with momentum_decay = 1 (its μ uses 0.96^(t·momentum_decay)).
#include <nlohmann/json.hpp>

#include "graph/graph.h"
#include "tandem/errors.h"
#include "tandem/optimizers.h"

namespace tandem::optimizers {

namespace {
class NadamOptimizer : public Optimizer {
 public:
  NadamOptimizer(const LearningRate& lr, NadamOptions o) : Optimizer(lr, o.clipping, o.weight_decay), o_(o) {
    if (!(o.beta_1 >= 0 && o.beta_1 < 1)) throw ValueError("Nadam: beta_1 must be in [0, 1), got " + std::to_string(o.beta_1));
    if (!(o.beta_2 >= 0 && o.beta_2 < 1)) throw ValueError("Nadam: beta_2 must be in [0, 1), got " + std::to_string(o.beta_2));
  }
  std::string name() const override { return "nadam"; }
  std::string config_json() const override {
    nlohmann::ordered_json c = nlohmann::ordered_json::parse(base_config_json());
    c.update({{"beta_1", o_.beta_1}, {"beta_2", o_.beta_2}, {"epsilon", o_.epsilon}});
    return c.dump();
  }

 protected:
  std::vector<std::string> slot_names() const override { return {"momentum", "velocity"}; }
  std::vector<std::pair<std::string, double>> state_variables() const override { return {{"u_product", 1.0}}; }
  // The updates read Πₜ₋₁ and form Πₜ themselves; u_product becomes Πₜ after all of them.
  void emit_update(graph::Graph& g, const graph::Value& var, const graph::Value& grad, const graph::Value& lr,
                   const graph::Value& iteration, const std::vector<graph::Value>& slots,
                   const std::vector<graph::Value>& state) const override {
    g.add_multi("nadam_update", {var, grad, lr, iteration, slots[0], slots[1], state[0]},
                {{"beta_1", o_.beta_1}, {"beta_2", o_.beta_2}, {"epsilon", o_.epsilon}});
  }
  void emit_state_update(graph::Graph& g, const graph::Value& iteration, const std::vector<graph::Value>& state) const override {
    g.add_multi("nadam_u_product_update", {state[0], iteration}, {{"beta_1", o_.beta_1}});
  }

 private:
  NadamOptions o_;
};
}  // namespace

OptimizerPtr Nadam(const LearningRate& learning_rate, const NadamOptions& options) {
  return std::make_shared<NadamOptimizer>(learning_rate, options);
}

}  // namespace tandem::optimizers
