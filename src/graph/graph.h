// The static SSA graph every part of Tandem speaks: layers emit nodes into it, autodiff and the
// optimizer append to it, strategies annotate and rewrite it, the compiler lowers it to a Plan.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "graph/attrs.h"
#include "graph/communication.h"
#include "tandem/tensor.h"

namespace tandem {
class Variable;
}
namespace tandem::ops {
struct OpDef;
}

namespace tandem::graph {

// Blocks are cut along phases; a later phase never feeds an earlier one.
enum class Phase : uint8_t { Forward, Metric, Backward, Update };

// What a node or variable is for, where its phase does not already say it (a metric's nodes are
// Phase::Metric, gradients Phase::Backward): a layer's work (its call, gradient, penalty and
// constraint; also what no other role claims: the inputs, the metrics, the lowering's own nodes),
// the loss (the targets, the per-sample losses, their sum and its gradient), or the optimizer's
// (its updates, and its variables: slots and counters). Strategies place nodes by it.
enum class Role : uint8_t { Layer, Loss, Optimizer };

struct Value {
  int node = -1;
  int index = 0;
  bool valid() const { return node >= 0; }
  bool operator==(const Value&) const = default;
};

struct Node {
  std::string op;                  // the op's name: for messages, traces, kernel lookup and saving
  const ops::OpDef* def = nullptr; // the op itself, resolved once by Graph::add: passes read its flags here
  std::vector<Value> inputs;
  std::vector<TensorType> outputs;
  Attrs attrs;
  std::string scope;        // the layer that emitted it: for errors, summaries and weight paths
  Role role = Role::Layer;
  std::optional<Communication> communication;  // set on the communication ops' nodes, and only there
  std::vector<int> after;   // control dependencies: nodes that must run first
  std::string device;  // the device whose program holds it (set when a Program is made)
  int stage = 0;       // the pipeline chunk it belongs to (its blocks are cut per chunk)
  Phase phase = Phase::Forward;
};

// A persistent tensor the graph reads and updates in place: weights, optimizer slots, counters.
// `id` names it in the owner's variable store, so graphs built for different batch sizes share it.
struct VariableInfo {
  int id = -1;
  std::string path;  // "dense_1/kernel", "optimizer/dense_1/kernel/momentum"
  TensorType type;
  bool trainable = false;
  Role role = Role::Layer;  // a layer's (weights, statistics) or the optimizer's (slots, counters)
  std::string slot_of;      // an optimizer slot: the path of the weight it belongs to
};

class Graph {
 public:
  // Appends a node after inferring its output types with the op's registry entry. The node gets
  // the graph's current scope and phase.
  Value add(const std::string& op, std::vector<Value> inputs, Attrs attrs = {});
  std::vector<Value> add_multi(const std::string& op, std::vector<Value> inputs, Attrs attrs = {});
  // Appends a communication node: the op of c's kind, carrying c (its shape inference reads it).
  std::vector<Value> communicate(Communication c, std::vector<Value> inputs, Attrs attrs = {});

  // A tensor fed from outside each step (a batch of inputs or labels).
  Value placeholder(const std::string& name, TensorType type);
  // Reads a persistent variable; one node per variable, however often it is asked for.
  Value variable(const VariableInfo& info);
  // variable() of a layer's or an optimizer's Variable, described as it says of itself.
  Value read_variable(const Variable& v);

  int size() const { return static_cast<int>(nodes_.size()); }
  const Node& node(int i) const { return nodes_[static_cast<std::size_t>(i)]; }
  Node& node(int i) { return nodes_[static_cast<std::size_t>(i)]; }
  const TensorType& type(Value v) const;
  const std::vector<VariableInfo>& variables() const { return variables_; }
  int variable_node(int variable_id) const;  // -1 if the graph never reads it

  // A cast of `v` to `to` (v itself if it has that dtype), made once per (value, dtype, phase):
  // a weight read by several ops of a step is converted once.
  Value cast(Value v, DType to);

  std::string scope;            // applied to nodes added from now on
  Role role = Role::Layer;      // applied to nodes added from now on
  // Whether ops added from now on get mixed precision's casts (graph/autocast.h): on while a
  // model's step is built, off for graphs that strategies and passes rewrite (their nodes keep the
  // dtypes the step gave them).
  bool autocast = false;
  // The compute dtype of the layer being traced (its dtype policy's), or none outside layers
  // (gradients, the optimizer): what the casts follow.
  std::optional<DType> compute_dtype;
  // The layers traced into the graph, in call order, each once, including those that emit no node
  // (a linear Activation), so that every layer a summary lists can name a pipeline stage's start.
  std::vector<std::string> layers;
  Phase phase = Phase::Forward;
  int stage = 0;

 private:
  std::vector<Value> add_node(const std::string& op, std::vector<Value> inputs, Attrs attrs, std::optional<Communication> c);

  std::vector<Node> nodes_;
  std::vector<VariableInfo> variables_;
  std::vector<int> variable_nodes_;  // parallel to variables_
  std::map<std::tuple<int, int, Phase, DType>, Value> casts_;  // (node, output, phase, dtype) -> the cast
};

// Sets the graph's compute dtype for a block of building code (a layer's call).
class ComputeDtypeGuard {
 public:
  ComputeDtypeGuard(Graph& g, std::optional<DType> dtype) : g_(g), old_(g.compute_dtype) { g.compute_dtype = dtype; }
  ~ComputeDtypeGuard() { g_.compute_dtype = old_; }
  ComputeDtypeGuard(const ComputeDtypeGuard&) = delete;
  ComputeDtypeGuard& operator=(const ComputeDtypeGuard&) = delete;

 private:
  Graph& g_;
  std::optional<DType> old_;
};

// Sets the graph's scope and role, or its phase, for a block of building code.
class ScopeGuard {
 public:
  ScopeGuard(Graph& g, std::string scope, Role role = Role::Layer) : g_(g), scope_(g.scope), phase_(g.phase), role_(g.role) {
    g.scope = std::move(scope);
    g.role = role;
  }
  ScopeGuard(Graph& g, Phase phase) : g_(g), scope_(g.scope), phase_(g.phase), role_(g.role) { g.phase = phase; }
  ~ScopeGuard() {
    g_.scope = scope_;
    g_.phase = phase_;
    g_.role = role_;
  }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;

 private:
  Graph& g_;
  std::string scope_;
  Phase phase_;
  Role role_;
};

}  // namespace tandem::graph
