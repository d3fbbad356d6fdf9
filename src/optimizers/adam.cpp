// Adam and AdamW (Keras 3): t = iterations + 1; α = lr·√(1−β₂ᵗ)/(1−β₁ᵗ); m += (g−m)(1−β₁);
// v += (g²−v)(1−β₂); w −= α·m/(√v + ε). AdamW first decays w −= w·wd·lr. Note ε is added after
// the bias correction of v is folded into α, unlike PyTorch.
#include <nlohmann/json.hpp>

#include "graph/graph.h"
#include "tandem/errors.h"
#include "tandem/optimizers.h"

namespace tandem::optimizers {

namespace {
class AdamOptimizer : public Optimizer {
 public:
  AdamOptimizer(const char* name, const LearningRate& lr, std::optional<double> wd, double b1, double b2, double eps,
                const GradientClipping& clipping)
      : Optimizer(lr, clipping, wd), name_(name), b1_(b1), b2_(b2), eps_(eps) {
    if (!(b1 >= 0 && b1 < 1)) throw ValueError(std::string(name) + ": beta_1 must be in [0, 1), got " + std::to_string(b1));
    if (!(b2 >= 0 && b2 < 1)) throw ValueError(std::string(name) + ": beta_2 must be in [0, 1), got " + std::to_string(b2));
  }
  std::string name() const override { return name_; }
  std::string config_json() const override {
    nlohmann::ordered_json c = nlohmann::ordered_json::parse(base_config_json());
    c["beta_1"] = b1_;
    c["beta_2"] = b2_;
    c["epsilon"] = eps_;
    c["amsgrad"] = false;
    return c.dump();
  }

 protected:
  std::vector<std::string> slot_names() const override { return {"momentum", "velocity"}; }
  void emit_update(graph::Graph& g, const graph::Value& var, const graph::Value& grad, const graph::Value& lr,
                   const graph::Value& iteration, const std::vector<graph::Value>& slots, const std::vector<graph::Value>&) const override {
    g.add_multi("adam_update", {var, grad, lr, iteration, slots[0], slots[1]},
                {{"beta_1", b1_}, {"beta_2", b2_}, {"epsilon", eps_}});
  }

 private:
  std::string name_;
  double b1_, b2_, eps_;
};
}  // namespace

OptimizerPtr Adam(const LearningRate& learning_rate, const AdamOptions& o) {
  return std::make_shared<AdamOptimizer>("adam", learning_rate, o.weight_decay, o.beta_1, o.beta_2, o.epsilon, o.clipping);
}
OptimizerPtr AdamW(const LearningRate& learning_rate, const AdamWOptions& o) {
  return std::make_shared<AdamOptimizer>("adamw", learning_rate, o.weight_decay, o.beta_1, o.beta_2, o.epsilon, o.clipping);
}

}  // namespace tandem::optimizers
