#include "model/regularization.h"

#include <algorithm>
#include <set>

#include "graph/op_registry.h"
#include "layer_base/penalties.h"
#include "ops/ops.h"

namespace tandem {

graph::Value add_regularization_losses(CallContext& ctx, const std::vector<VariablePtr>& weights, graph::Value loss) {
  graph::Graph& g = ctx.g;
  const DType dtype = g.type(loss).dtype;
  auto add = [&](graph::Value term) {
    if (g.type(term).dtype != dtype) term = ops::cast(g, term, dtype);
    loss = ops::add(g, loss, term);
  };
  std::set<int> seen;
  for (const VariablePtr& w : weights) {
    if (!w->trainable() || !w->regularizer() || !seen.insert(w->id()).second) continue;
    const graph::Value v = ctx.variable(*w);
    graph::Value penalty;
    {
      graph::ScopeGuard scope(g, g.node(v.node).scope);
      penalty = regularization_penalty(g, v, w->regularizer(), "the regularizer of weight \"" + w->path() + "\"");
      if (ctx.micro_batches > 1) penalty = ops::scale(g, penalty, 1.0 / double(ctx.micro_batches));
    }
    add(penalty);
  }
  for (graph::Value extra : ctx.added_losses) add(extra);
  return loss;
}

void emit_constraints(CallContext& ctx, const std::vector<VariablePtr>& trainable, int first_update) {
  graph::Graph& g = ctx.g;
  const int end = g.size();
  for (const VariablePtr& w : trainable) {
    if (!w->constraint()) continue;
    const graph::Value v = ctx.variable(*w);
    std::vector<int> updates;
    for (int n = first_update; n < end; ++n) {
      const graph::Node& node = g.node(n);
      if (!node.inputs.empty() && node.inputs[0] == v && std::count(node.def->writes_inputs.begin(), node.def->writes_inputs.end(), 0))
        updates.push_back(n);
    }
    if (updates.empty()) continue;  // no gradient, no update: Keras leaves the weight as it is
    emit_constraint(g, v, w->constraint(), std::move(updates), "the constraint of weight \"" + w->path() + "\"");
  }
}

}  // namespace tandem
