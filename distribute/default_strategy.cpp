// Default: one device runs the whole program; every step is forward, metrics, backward, update.
#include <cstdlib>
#include <thread>

#include "distribute/strategy.h"
#include "backend/device.h"
#include "tandem/errors.h"

namespace tandem::distribute {

int Strategy::threads_per_device() const {
  // TANDEM_NUM_THREADS caps the threads of the whole process (like OMP_NUM_THREADS).
  const char* env = std::getenv("TANDEM_NUM_THREADS");
  const int cores = env && std::atoi(env) > 0 ? std::atoi(env) : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / static_cast<int>(devices().size()));
}

compile::Program single_program(const std::string& device, graph::Graph g, const std::vector<graph::Value>& fetches) {
  compile::Program p;
  p.device = device;
  p.graph = std::move(g);
  for (int i = 0; i < p.graph.size(); ++i) p.graph.node(i).device = device;
  const std::vector<int> order = compile::execution_order(p.graph, fetches);
  p.blocks = compile::blocks_by_phase(p.graph, order);
  p.memory = compile::plan_memory(p.graph, order, fetches);
  p.fetches = fetches;
  return p;
}

std::vector<compile::Action> run_all_blocks(const compile::Program& p) {
  std::vector<compile::Action> actions;
  for (std::size_t b = 0; b < p.blocks.size(); ++b) actions.push_back({static_cast<int>(b), 0});
  return actions;
}

namespace {
class DefaultStrategy : public Strategy {
 public:
  explicit DefaultStrategy(std::string device) : device_(backend::parse_device(device).str()) {}
  std::vector<std::string> devices() const override { return {device_}; }

  compile::Plan lower_replicas(std::vector<graph::Graph> replicas, const std::vector<graph::Value>& fetches) const override {
    if (replicas.size() != 1) throw Error("internal: Default lowers exactly one graph");
    compile::Plan plan;
    plan.programs.push_back(single_program(device_, std::move(replicas[0]), fetches));
    plan.schedule.push_back(run_all_blocks(plan.programs[0]));
    return plan;
  }

 private:
  std::string device_;
};
}  // namespace

StrategyPtr Default(const std::string& device) { return std::make_shared<DefaultStrategy>(device); }

}  // namespace tandem::distribute
