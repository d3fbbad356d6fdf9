#include "graph/graph.h"

#include "graph/autocast.h"
#include "graph/op_registry.h"
#include "tandem/errors.h"

namespace tandem::graph {

std::vector<Value> Graph::add_multi(const std::string& op, std::vector<Value> inputs, Attrs attrs) {
  const ops::OpDef& def = ops::find(op);
  if (autocast) inputs = autocast_inputs(*this, op, std::move(inputs));
  std::vector<TensorType> in;
  in.reserve(inputs.size());
  for (Value v : inputs) in.push_back(type(v));
  Node n;
  try {
    n.outputs = def.infer(attrs, in);
  } catch (const ShapeError& e) {
    // Ops report the shapes; the scope says which layer asked for them.
    throw ShapeError((scope.empty() ? std::string() : "layer \"" + scope + "\": ") + e.what());
  }
  n.op = op;
  n.def = &def;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  n.scope = scope;
  n.phase = phase;
  n.stage = stage;
  const int id = size();
  nodes_.push_back(std::move(n));
  std::vector<Value> out;
  for (int i = 0; i < static_cast<int>(nodes_.back().outputs.size()); ++i) out.push_back({id, i});
  return out;
}

Value Graph::add(const std::string& op, std::vector<Value> inputs, Attrs attrs) {
  auto out = add_multi(op, std::move(inputs), std::move(attrs));
  if (out.size() != 1) throw Error("internal: op " + op + " has " + std::to_string(out.size()) + " outputs");
  return out[0];
}

Value Graph::cast(Value v, DType to) {
  if (type(v).dtype == to) return v;
  const auto key = std::make_tuple(v.node, v.index, phase, to);
  if (const auto it = casts_.find(key); it != casts_.end()) return it->second;
  const Value c = add("cast", {v}, {{"dtype", static_cast<int64_t>(to)}});
  casts_.emplace(key, c);
  return c;
}

Value Graph::placeholder(const std::string& name, TensorType t) {
  return add("placeholder", {}, {{"name", name}, {"shape", t.shape.dims()}, {"dtype", static_cast<int64_t>(t.dtype)}});
}

Value Graph::variable(const VariableInfo& info) {
  for (std::size_t i = 0; i < variables_.size(); ++i)
    if (variables_[i].id == info.id) return {variable_nodes_[i], 0};
  ScopeGuard guard(*this, Phase::Forward);
  Value v = add("variable", {},
                {{"var", static_cast<int64_t>(info.id)}, {"shape", info.type.shape.dims()},
                 {"dtype", static_cast<int64_t>(info.type.dtype)}});
  variables_.push_back(info);
  variable_nodes_.push_back(v.node);
  return v;
}

int Graph::variable_node(int variable_id) const {
  for (std::size_t i = 0; i < variables_.size(); ++i)
    if (variables_[i].id == variable_id) return variable_nodes_[i];
  return -1;
}

const TensorType& Graph::type(Value v) const {
  if (v.node < 0 || v.node >= size()) throw Error("internal: value of node " + std::to_string(v.node) + " is not in the graph");
  const Node& n = node(v.node);
  return n.outputs.at(static_cast<std::size_t>(v.index));
}

}  // namespace tandem::graph
