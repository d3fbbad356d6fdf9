#include "graph/graph.h"

#include "graph/autocast.h"
#include "graph/op_registry.h"
#include "tandem/errors.h"
#include "tandem/layer.h"

namespace tandem::graph {

const char* op_name(Communication::Kind kind) {
  using K = Communication::Kind;
  switch (kind) {
    case K::AllReduceStart: return "all_reduce_start";
    case K::AllReduceWait: return "all_reduce_wait";
    case K::AllGather: return "all_gather";
    case K::ReduceScatter: return "reduce_scatter";
    case K::Send: return "send";
    case K::Recv: return "recv";
  }
  throw Error("internal: a communication of unknown kind " + std::to_string(static_cast<int>(kind)));
}

std::vector<Value> Graph::add_multi(const std::string& op, std::vector<Value> inputs, Attrs attrs) {
  return add_node(op, std::move(inputs), std::move(attrs), std::nullopt);
}

std::vector<Value> Graph::communicate(Communication c, std::vector<Value> inputs, Attrs attrs) {
  const std::string op = op_name(c.kind);
  return add_node(op, std::move(inputs), std::move(attrs), std::move(c));
}

std::vector<Value> Graph::add_node(const std::string& op, std::vector<Value> inputs, Attrs attrs, std::optional<Communication> c) {
  const ops::OpDef& def = ops::find(op);
  if (static_cast<bool>(def.infer_communication) != c.has_value())
    throw Error("internal: op " + op + (c ? " is not a communication op" : " is a communication op: add it with Graph::communicate"));
  if (autocast) inputs = autocast_inputs(*this, op, std::move(inputs));
  std::vector<TensorType> in;
  in.reserve(inputs.size());
  for (Value v : inputs) in.push_back(type(v));
  Node n;
  try {
    n.outputs = c ? def.infer_communication(*c, attrs, in) : def.infer(attrs, in);
  } catch (const ShapeError& e) {
    // Ops report the shapes; the scope says which layer asked for them.
    throw ShapeError((scope.empty() ? std::string() : "layer \"" + scope + "\": ") + e.what());
  }
  n.op = op;
  n.def = &def;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  n.scope = scope;
  n.role = role;
  n.communication = std::move(c);
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

Value Graph::read_variable(const Variable& v) {
  return variable({v.id(), v.path(), v.value().type(), v.trainable(), v.optimizer_state() ? Role::Optimizer : Role::Layer, v.slot_of()});
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
