#include <algorithm>

#include "compile/plan.h"
#include "ops/registry.h"
#include "tandem/errors.h"

namespace tandem::compile {

std::vector<int> execution_order(const graph::Graph& g, const std::vector<graph::Value>& fetches) {
  std::vector<bool> needed(static_cast<std::size_t>(g.size()), false);
  std::vector<int> stack;
  for (graph::Value v : fetches) stack.push_back(v.node);
  for (int i = 0; i < g.size(); ++i)
    if (ops::find(g.node(i).op).has_side_effects) stack.push_back(i);
  while (!stack.empty()) {
    const int n = stack.back();
    stack.pop_back();
    if (needed[static_cast<std::size_t>(n)]) continue;
    needed[static_cast<std::size_t>(n)] = true;
    for (graph::Value in : g.node(n).inputs) stack.push_back(in.node);
    for (int a : g.node(n).after) stack.push_back(a);
  }
  std::vector<int> order;
  for (int i = 0; i < g.size(); ++i)
    if (needed[static_cast<std::size_t>(i)]) order.push_back(i);
  // Creation order is topological; phases only ever read earlier phases, so sorting by phase
  // keeps it topological while grouping each phase into one block. Checked below.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return g.node(a).phase < g.node(b).phase; });
  std::vector<int> position(static_cast<std::size_t>(g.size()), -1);
  for (std::size_t p = 0; p < order.size(); ++p) position[static_cast<std::size_t>(order[p])] = static_cast<int>(p);
  for (std::size_t p = 0; p < order.size(); ++p) {
    const graph::Node& n = g.node(order[p]);
    for (graph::Value in : n.inputs)
      if (position[static_cast<std::size_t>(in.node)] > static_cast<int>(p))
        throw Error("internal: node " + std::to_string(order[p]) + " (" + n.op + ") reads a value of a later phase");
  }
  return order;
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
