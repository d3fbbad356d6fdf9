// RMSprop (Keras 3): ms = ρ·ms + (1−ρ)·g²; step = lr·g/√(ms + ε) (ε inside the root, unlike
// PyTorch); with momentum: mom = momentum·mom + step; w −= mom; else w −= step.
#include <nlohmann/json.hpp>

#include "graph/graph.h"
#include "tandem/errors.h"
#include "tandem/optimizers.h"

namespace tandem::optimizers {

namespace {
class RMSpropOptimizer : public Optimizer {
 public:
  RMSpropOptimizer(const LearningRate& lr, RMSpropOptions o) : Optimizer(lr, o.clipping, o.weight_decay), o_(o) {
    if (!(o.rho >= 0 && o.rho < 1)) throw ValueError("RMSprop: rho must be in [0, 1), got " + std::to_string(o.rho));
  }
  std::string name() const override { return "rmsprop"; }
  std::string config_json() const override {
    nlohmann::ordered_json c = nlohmann::ordered_json::parse(base_config_json());
    c.update({{"rho", o_.rho}, {"momentum", o_.momentum}, {"epsilon", o_.epsilon}, {"centered", false}});
    return c.dump();
  }

 protected:
  std::vector<std::string> slot_names() const override {
    if (o_.momentum > 0) return {"velocity", "momentum"};
    return {"velocity"};
  }
  bool keras_slot_blocks() const override { return true; }
  void emit_update(graph::Graph& g, const graph::Value& var, const graph::Value& grad, const graph::Value& lr,
                   const graph::Value&, const std::vector<graph::Value>& slots, const std::vector<graph::Value>&) const override {
    std::vector<graph::Value> in{var, grad, lr};
    in.insert(in.end(), slots.begin(), slots.end());
    g.add_multi("rmsprop_update", in, {{"rho", o_.rho}, {"epsilon", o_.epsilon}, {"momentum", o_.momentum}});
  }

 private:
  RMSpropOptions o_;
};
}  // namespace

OptimizerPtr RMSprop(const LearningRate& learning_rate, const RMSpropOptions& options) {
  return std::make_shared<RMSpropOptimizer>(learning_rate, options);
}

}  // namespace tandem::optimizers
