#include "autodiff/autodiff.h"

#include <map>

#include "graph/autocast.h"
#include "ops/ops.h"
#include "ops/widened.h"
#include "tandem/errors.h"

namespace tandem::autodiff {

using graph::Graph;
using graph::Value;

namespace {
// Nodes that lie on a path from some wrt value to the loss: only these need gradients.
std::vector<bool> on_path(const Graph& g, Value loss, const std::vector<Value>& wrt) {
  const auto n = static_cast<std::size_t>(loss.node + 1);
  std::vector<bool> from_wrt(n, false), to_loss(n, false);
  for (Value w : wrt)
    if (w.valid() && w.node <= loss.node) from_wrt[static_cast<std::size_t>(w.node)] = true;
  for (std::size_t i = 0; i < n; ++i)
    for (Value in : g.node(static_cast<int>(i)).inputs)
      if (from_wrt[static_cast<std::size_t>(in.node)]) from_wrt[i] = true;
  to_loss[n - 1] = true;
  for (std::size_t i = n; i-- > 0;)
    if (to_loss[i])
      for (Value in : g.node(static_cast<int>(i)).inputs) to_loss[static_cast<std::size_t>(in.node)] = true;
  std::vector<bool> both(n);
  for (std::size_t i = 0; i < n; ++i) both[i] = from_wrt[i] && to_loss[i];
  return both;
}

struct ValueLess {
  bool operator()(Value a, Value b) const { return a.node != b.node ? a.node < b.node : a.index < b.index; }
};
}  // namespace

std::vector<Value> gradients(Graph& g, Value loss, const std::vector<Value>& wrt) {
  if (g.type(loss).shape.num_elements() != 1)
    throw Error("gradients: the loss must be a scalar, got shape " + g.type(loss).shape.str());
  const std::vector<bool> needed = on_path(g, loss, wrt);
  std::map<Value, Value, ValueLess> grad;  // built once at compile time, not per step
  auto accumulate = [&](Value of, Value d) {
    // A gradient has its value's dtype: a 16-bit activation's gradient is 16-bit too (mixed
    // precision), and the cast that made it from a float32 weight turns it back into float32.
    // A 16-bit copy of a float32 value (a weight's, under a mixed policy) keeps its gradient in
    // float32 instead, never rounded to 16 bits on the way to the weight: the float32 sums of a
    // product (ops/widened.h), or a float32 column sum (a bias's) as it is.
    const graph::Node& maker = g.node(of.node);
    if (maker.op == "cast" && g.type(maker.inputs[0]).dtype == DType::F32 && graph::is_16bit(g.type(of).dtype))
      d = ops::widened(g, d, DType::F32);
    else
      d = ops::cast(g, d, g.type(of).dtype);
    auto [it, inserted] = grad.emplace(of, d);
    if (!inserted) it->second = ops::add(g, it->second, d);
  };

  graph::ScopeGuard phase(g, graph::Phase::Backward);
  graph::ScopeGuard scope(g, g.node(loss.node).scope, g.node(loss.node).role);
  grad.emplace(loss, ops::fill(g, g.type(loss), 1.0));

  for (int id = loss.node; id >= 0; --id) {
    if (!needed[static_cast<std::size_t>(id)]) continue;
    const graph::Node& node = g.node(id);
    std::vector<Value> dys;
    bool any = false;
    for (int o = 0; o < static_cast<int>(node.outputs.size()); ++o) {
      auto it = grad.find({id, o});
      dys.push_back(it == grad.end() ? Value{} : it->second);
      any = any || it != grad.end();
    }
    if (!any || node.inputs.empty()) continue;
    const ops::OpDef& def = *node.def;
    if (def.zero_grad) continue;
    if (!def.grad) throw Error("gradients: op '" + node.op + "' in layer \"" + node.scope + "\" has no gradient");
    g.scope = node.scope;
    g.role = node.role;
    ops::GradContext ctx(g, id, dys);
    def.grad(ctx);
    const std::vector<Value>& dx = ctx.grads();
    for (std::size_t i = 0; i < dx.size(); ++i) {
      const Value in = g.node(id).inputs[i];
      if (dx[i].valid() && needed[static_cast<std::size_t>(in.node)] && ops::is_float(g.type(in).dtype)) accumulate(in, dx[i]);
    }
  }

  std::vector<Value> out;
  for (Value w : wrt) {
    auto it = grad.find(w);
    out.push_back(it == grad.end() ? Value{} : it->second);
  }
  return out;
}

}  // namespace tandem::autodiff
