// SGD (Keras 3): v = momentum·v − lr·g; w += v  (Nesterov: w += momentum·v − lr·g).
#include <nlohmann/json.hpp>

#include "graph/graph.h"
#include "tandem/errors.h"
#include "tandem/optimizers.h"

namespace tandem::optimizers {

namespace {
class SGDOptimizer : public Optimizer {
 public:
  SGDOptimizer(const LearningRate& lr, SGDOptions o) : Optimizer(lr, o.clipping, o.weight_decay), o_(o) {
    if (!(o.momentum >= 0.0 && o.momentum <= 1.0)) throw ValueError("SGD: momentum must be in [0, 1], got " + std::to_string(o.momentum));
  }
  std::string name() const override { return "sgd"; }
  std::string config_json() const override {
    nlohmann::ordered_json c = nlohmann::ordered_json::parse(base_config_json());
    c.update({{"momentum", o_.momentum}, {"nesterov", o_.nesterov}});
    return c.dump();
  }

 protected:
  std::vector<std::string> slot_names() const override {
    return o_.momentum > 0 ? std::vector<std::string>{"momentum"} : std::vector<std::string>{};
  }
  void emit_update(graph::Graph& g, const graph::Value& var, const graph::Value& grad, const graph::Value& lr,
                   const graph::Value&, const std::vector<graph::Value>& slots, const std::vector<graph::Value>&) const override {
    std::vector<graph::Value> in{var, grad, lr};
    in.insert(in.end(), slots.begin(), slots.end());
    g.add_multi("sgd_update", in, {{"momentum", o_.momentum}, {"nesterov", o_.nesterov}});
  }

 private:
  SGDOptions o_;
};
}  // namespace

OptimizerPtr SGD(const LearningRate& learning_rate, const SGDOptions& options) { return std::make_shared<SGDOptimizer>(learning_rate, options); }

}  // namespace tandem::optimizers
