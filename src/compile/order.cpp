#include <algorithm>
#include <queue>
#include <tuple>

#include "compile/fusion.h"
#include "compile/plan.h"
#include "graph/op_registry.h"
#include "tandem/errors.h"

namespace tandem::compile {

std::vector<bool> needed_nodes(const graph::Graph& g, const std::vector<graph::Value>& fetches, const std::vector<int>& also) {
  std::vector<bool> needed(static_cast<std::size_t>(g.size()), false);
  std::vector<int> stack = also;
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
  return needed;
}

std::vector<int> execution_order(const graph::Graph& g, const std::vector<graph::Value>& fetches) {
  const auto n = static_cast<std::size_t>(g.size());
  const std::vector<bool> needed = needed_nodes(g, fetches);

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
  // Within a phase, a pipeline's chunks (Node::stage) stay together: forward in chunk order,
  // backward in reverse, as the gradients flow.
  auto key = [&](int id) {
    const graph::Node& node = g.node(id);
    const int chunk = node.phase == graph::Phase::Backward ? -node.stage : node.stage;
    return std::tuple<bool, int, int, int>(!node.def->eager, static_cast<int>(node.phase), chunk, id);
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

Program single_program(const std::string& device, graph::Graph g, const std::vector<graph::Value>& fetched, int micro_batches,
                       int in_flight) {
  if (micro_batches < 1 || in_flight < 1 || in_flight > micro_batches)
    throw Error("internal: " + std::to_string(in_flight) + " of " + std::to_string(micro_batches) + " micro-batches in flight");
  Program p;
  p.device = device;
  p.graph = std::move(g);
  for (int i = 0; i < p.graph.size(); ++i) p.graph.node(i).device = device;
  std::vector<graph::Value> fetches = fetched;
  if (fusion_enabled()) fuse(p.graph, fetches);
  const std::vector<int> order = execution_order(p.graph, fetches);
  p.blocks = blocks_by_phase(p.graph, order);
  if (micro_batches == 1) {
    p.memory = plan_memory(p.graph, order, fetches);
  } else {
    p.once_per_step = once_per_step_nodes(p.graph, p.blocks);
    p.memory = plan_micro_batched_memory(p.graph, p.blocks, fetches, p.once_per_step, micro_batches, in_flight);
  }
  p.fetches = fetches;
  return p;
}

std::vector<Block> blocks_by_phase(const graph::Graph& g, const std::vector<int>& order) {
  std::vector<Block> blocks;
  for (int n : order) {
    const graph::Node& node = g.node(n);
    if (blocks.empty() || blocks.back().phase != node.phase || blocks.back().stage != node.stage) blocks.push_back({node.phase, {}, node.stage});
    blocks.back().nodes.push_back(n);
  }
  return blocks;
}

}  // namespace tandem::compile
