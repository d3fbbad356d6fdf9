#include <queue>
#include <tuple>

#include "compile/plan.h"
#include "graph/op_registry.h"
#include "tandem/errors.h"

namespace tandem::compile {

std::vector<int> execution_order(const graph::Graph& g, const std::vector<graph::Value>& fetches) {
  const auto n = static_cast<std::size_t>(g.size());
  std::vector<bool> needed(n, false);
  std::vector<int> stack;
  for (graph::Value v : fetches)
    if (v.valid()) stack.push_back(v.node);
  for (int i = 0; i < g.size(); ++i)
    if (g.node(i).def->has_side_effects) stack.push_back(i);
  while (!stack.empty()) {
    const int id = stack.back();
    stack.pop_back();
    if (needed[static_cast<std::size_t>(id)]) continue;
    needed[static_cast<std::size_t>(id)] = true;
    for (graph::Value in : g.node(id).inputs) stack.push_back(in.node);
    for (int a : g.node(id).after) stack.push_back(a);
  }

  // A topological order that, among the nodes ready to run, picks eager nodes first (they start
  // communication), then the earliest phase, then creation order. Phases therefore stay grouped
  // wherever the dependencies allow it.
  std::vector<int> waiting(n, 0);
  std::vector<std::vector<int>> users(n);
  for (int id = 0; id < g.size(); ++id) {
    if (!needed[static_cast<std::size_t>(id)]) continue;
    const graph::Node& node = g.node(id);
    std::vector<int> deps;
    for (graph::Value in : node.inputs) deps.push_back(in.node);
    deps.insert(deps.end(), node.after.begin(), node.after.end());
    for (int d : deps) {
      ++waiting[static_cast<std::size_t>(id)];
      users[static_cast<std::size_t>(d)].push_back(id);
    }
  }
  auto key = [&](int id) {
    const graph::Node& node = g.node(id);
    return std::tuple<bool, int, int>(!node.def->eager, static_cast<int>(node.phase), id);
  };
  auto later = [&](int a, int b) { return key(a) > key(b); };
  std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
  for (int id = 0; id < g.size(); ++id)
    if (needed[static_cast<std::size_t>(id)] && waiting[static_cast<std::size_t>(id)] == 0) ready.push(id);
  std::vector<int> order;
  while (!ready.empty()) {
    const int id = ready.top();
    ready.pop();
    order.push_back(id);
    for (int u : users[static_cast<std::size_t>(id)])
      if (--waiting[static_cast<std::size_t>(u)] == 0) ready.push(u);
  }
  std::size_t count = 0;
  for (bool b : needed) count += b;
  if (order.size() != count) throw Error("internal: the graph has a cycle");
  return order;
}

Program single_program(const std::string& device, graph::Graph g, const std::vector<graph::Value>& fetches) {
  Program p;
  p.device = device;
  p.graph = std::move(g);
  for (int i = 0; i < p.graph.size(); ++i) p.graph.node(i).device = device;
  const std::vector<int> order = execution_order(p.graph, fetches);
  p.blocks = blocks_by_phase(p.graph, order);
  p.memory = plan_memory(p.graph, order, fetches);
  p.fetches = fetches;
  return p;
}

std::vector<Action> run_all_blocks(const Program& p) {
  std::vector<Action> actions;
  for (std::size_t b = 0; b < p.blocks.size(); ++b) actions.push_back({static_cast<int>(b), 0});
  return actions;
}

std::vector<Block> blocks_by_phase(const graph::Graph& g, const std::vector<int>& order) {
  std::vector<Block> blocks;
  for (int n : order) {
    if (blocks.empty() || blocks.back().phase != g.node(n).phase) blocks.push_back({g.node(n).phase, {}});
    blocks.back().nodes.push_back(n);
  }
  return blocks;
}

}  // namespace tandem::compile
