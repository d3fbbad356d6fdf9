// Default: one device runs the whole program; every step is forward, metrics, backward, update.
#include "distribute/strategy.h"
#include "runtime/devices.h"

namespace tandem::distribute {

namespace {
class DefaultStrategy : public Strategy {
 public:
  explicit DefaultStrategy(std::string device) : device_(runtime::canonical_device(device)) {}
  std::vector<std::string> devices() const override { return {device_}; }

  compile::Plan lower(const graph::Graph& g, const std::vector<graph::Value>& fetches) const override {
    compile::Program p;
    p.device = device_;
    p.graph = g;
    for (int i = 0; i < p.graph.size(); ++i) p.graph.node(i).device = device_;
    const std::vector<int> order = compile::execution_order(p.graph, fetches);
    p.blocks = compile::blocks_by_phase(p.graph, order);
    p.memory = compile::plan_memory(p.graph, order, fetches);
    p.fetches = fetches;
    compile::Plan plan;
    std::vector<compile::Action> actions;
    for (std::size_t b = 0; b < p.blocks.size(); ++b) actions.push_back({static_cast<int>(b), 0});
    plan.programs.push_back(std::move(p));
    plan.schedule.push_back(std::move(actions));
    return plan;
  }

 private:
  std::string device_;
};
}  // namespace

StrategyPtr Default(const std::string& device) { return std::make_shared<DefaultStrategy>(device); }

}  // namespace tandem::distribute
