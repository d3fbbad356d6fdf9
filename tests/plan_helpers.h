// What the strategy tests read from lowered plans: the graph and description of a model's
// training step (a strategy that records them), the matrix-product FLOPs each program runs, and
// the collectives it holds.
#pragma once

#include <tandem/tandem.h>

#include <string>
#include <vector>

#include "compile/lower.h"
#include "distribute/strategy.h"
#include "graph/op_registry.h"

// A strategy that describes as `inner` does and keeps each graph with its description; plan()
// lowers them again, as the model's step did.
class Recording : public tandem::distribute::Strategy {
 public:
  explicit Recording(tandem::distribute::StrategyPtr inner) : inner_(std::move(inner)) {}
  std::vector<std::string> devices() const override { return inner_->devices(); }
  tandem::compile::LoweringOptions describe(const tandem::graph::Graph& g, int micro_batches) const override {
    graphs.push_back(g);
    descriptions.push_back(inner_->describe(g, micro_batches));
    return descriptions.back();
  }
  using CommunicatorPtr = decltype(std::declval<const tandem::distribute::Strategy&>().communicator());
  CommunicatorPtr communicator() const override { return inner_->communicator(); }
  tandem::compile::Plan plan(std::size_t i) const { return tandem::compile::lower(graphs.at(i), {}, descriptions.at(i)); }
  mutable std::vector<tandem::graph::Graph> graphs;
  mutable std::vector<tandem::compile::LoweringOptions> descriptions;

 private:
  tandem::distribute::StrategyPtr inner_;
};

// The multiply-adds ×2 of the matrix products a program runs (the nodes of its blocks; nodes that
// fusion replaced stay in its graph unread): an (M, K)·(K, N) product is 2·M·K·N, and the output
// holds M·N (times any batch) elements.
inline int64_t product_flops(const tandem::compile::Program& p) {
  int64_t flops = 0;
  for (const auto& block : p.blocks)
    for (int id : block.nodes) {
      const tandem::graph::Node& n = p.graph.node(id);
      if (n.op != "matmul" && n.op != "fused_matmul" && n.op != "batch_matmul") continue;
      const tandem::Shape& a = p.graph.type(n.inputs[0]).shape;
      const bool ta = n.attrs.b("transpose_a");
      const int64_t k = n.op == "batch_matmul" ? (ta ? a[-2] : a[-1]) : (ta ? a[0] : a[a.rank() - 1]);
      flops += 2 * k * n.outputs[0].shape.num_elements();
    }
  return flops;
}

// Whether an all_gather reads a weight (or optimizer slot).
inline bool gathers_a_weight(const tandem::compile::Program& p) {
  for (int id = 0; id < p.graph.size(); ++id)
    if (p.graph.node(id).op == "all_gather")
      for (tandem::graph::Value v : p.graph.node(id).inputs)
        if (p.graph.node(v.node).def->source == tandem::ops::Source::Variable) return true;
  return false;
}

// The nodes of `op` a program runs.
inline int count_ops_run(const tandem::compile::Program& p, const std::string& op) {
  int n = 0;
  for (const auto& block : p.blocks)
    for (int id : block.nodes) n += p.graph.node(id).op == op;
  return n;
}
