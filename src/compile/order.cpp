#include <algorithm>
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

Program single_program(const std::string& device, graph::Graph g, const std::vector<graph::Value>& fetches, int micro_batches,
                       int in_flight) {
  if (micro_batches < 1 || in_flight < 1 || in_flight > micro_batches)
    throw Error("internal: " + std::to_string(in_flight) + " of " + std::to_string(micro_batches) + " micro-batches in flight");
  Program p;
  p.device = device;
  p.graph = std::move(g);
  for (int i = 0; i < p.graph.size(); ++i) p.graph.node(i).device = device;
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

std::vector<Action> run_all_blocks(const Program& p) {
  const int m = p.micro_batches(), in_flight = p.memory.in_flight;
  const auto blocks = static_cast<int>(p.blocks.size());
  std::vector<Action> actions;
  auto add = [&](auto keep, int micro) {
    for (int b = 0; b < blocks; ++b)
      if (keep(p.blocks[static_cast<std::size_t>(b)])) actions.push_back({b, micro});
  };
  auto forward = [](const Block& b) { return b.per_micro_batch() && b.phase != graph::Phase::Backward; };
  auto backward = [](const Block& b) { return b.phase == graph::Phase::Backward; };
  auto per_micro = [](const Block& b) { return b.per_micro_batch(); };
  auto update = [](const Block& b) { return !b.per_micro_batch(); };
  if (m == 1 || in_flight == 1) {
    for (int j = 0; j < m; ++j) add(per_micro, j);
  } else if (in_flight == m) {
    // Every forward block must come before every backward one, or the reordering would break
    // a dependency.
    for (int b = 1; b < blocks; ++b)
      if (backward(p.blocks[static_cast<std::size_t>(b - 1)]) && forward(p.blocks[static_cast<std::size_t>(b)]))
        throw Error("internal: " + p.device + "'s blocks interleave forward and backward; all micro-batches cannot be in flight");
    for (int j = 0; j < m; ++j) add(forward, j);
    for (int j = 0; j < m; ++j) add(backward, j);
  } else {
    throw Error("internal: a schedule for " + std::to_string(in_flight) + " of " + std::to_string(m) + " micro-batches in flight");
  }
  add(update, m - 1);
  return actions;
}

std::vector<Action> one_forward_one_backward(const Program& p, int warmup) {
  const int m = p.micro_batches();
  std::vector<Action> actions;
  auto add = [&](bool backward, int micro) {
    for (std::size_t b = 0; b < p.blocks.size(); ++b) {
      const Block& block = p.blocks[b];
      if (block.per_micro_batch() && (block.phase == graph::Phase::Backward) == backward)
        actions.push_back({static_cast<int>(b), micro});
    }
  };
  warmup = std::min(warmup, m);
  for (int j = 0; j < warmup; ++j) add(false, j);
  for (int j = 0; j < m; ++j) {
    if (warmup + j < m) add(false, warmup + j);
    add(true, j);
  }
  for (std::size_t b = 0; b < p.blocks.size(); ++b)
    if (!p.blocks[b].per_micro_batch()) actions.push_back({static_cast<int>(b), m - 1});
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
