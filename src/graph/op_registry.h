// The op registry: per op, how to infer output types and how to differentiate it. It lives with the
// graph, which resolves every node against it; the ops themselves register in src/ops. Kernels are
// elsewhere (backends); this file knows nothing of devices.
#pragma once

#include <cstdint>
#include <functional>
#include <source_location>
#include <string>
#include <vector>

#include "core/registry.h"
#include "graph/graph.h"
#include "graph/layout.h"

namespace tandem::ops {

using graph::Attrs;
using graph::Graph;
using graph::Value;

// What a gradient rule sees: the forward node, its inputs and outputs, and the incoming gradients.
class GradContext {
 public:
  GradContext(Graph& g, int node, std::vector<Value> dys) : g(g), node_(node), dys_(std::move(dys)) {}
  Graph& g;
  const graph::Node& node() const { return g.node(node_); }
  const Attrs& attrs() const { return node().attrs; }
  Value input(int i) const { return node().inputs[static_cast<std::size_t>(i)]; }
  Value output(int i = 0) const { return {node_, i}; }
  const TensorType& input_type(int i) const { return g.type(input(i)); }
  // Incoming gradient of output i; invalid if that output does not reach the loss.
  Value dy(int i = 0) const { return dys_[static_cast<std::size_t>(i)]; }
  void set(int input, Value grad);
  const std::vector<Value>& grads() const { return grads_; }

 private:
  int node_;
  std::vector<Value> dys_;
  std::vector<Value> grads_;
};

using InferFn = std::function<std::vector<TensorType>(const Attrs&, const std::vector<TensorType>& inputs)>;
// A communication op's: its node's Communication says how many ranks it spans.
using CommunicationInferFn =
    std::function<std::vector<TensorType>(const graph::Communication&, const Attrs&, const std::vector<TensorType>& inputs)>;
using GradFn = std::function<void(GradContext&)>;

// Where an op's outputs come from. Most ops compute them with a kernel. A placeholder's are fed
// from outside before each step and a variable's are the variable's own storage: the runtime
// binds that memory instead of running a kernel, and the memory planner treats it specially.
enum class Source : uint8_t { Kernel, Feed, Variable };

struct OpDef {
  std::string name;
  InferFn infer;
  // Set instead of infer for the communication ops, whose nodes carry a Communication and are
  // added with Graph::communicate.
  CommunicationInferFn infer_communication;
  GradFn grad;                    // empty: the op is not differentiable (asking is an error)
  bool zero_grad = false;         // integer-valued ops (argmax, equal): gradients stop here
  std::vector<int> writes_inputs; // update ops write these inputs in place (variables)
  bool has_side_effects = false;  // kept even when no output is used
  int gradient_input = -1;        // update ops: which input is the gradient (strategies reduce it)
  bool eager = false;             // scheduled as soon as its inputs exist (starts communication early)
  bool contiguous_inputs = false; // the memory planner lays the inputs out back to back
  bool outputs_alias_inputs = false;  // output i is input i's buffer (views, in-place results)
  Source source = Source::Kernel;
  graph::LayoutFn layout;         // which input layouts it works on (empty: replicated ones only)
  graph::LocalizeFn localize;     // its attributes for one device's part (empty: unchanged)
};

// Op names to definitions; a name registered twice is an error (see core/registry.h).
struct OpRegistry : core::Registry<std::string, OpDef> {
  OpRegistry() : Registry("op") {}
  void add(OpDef def, std::source_location loc);
};

OpRegistry& registry();  // the process's: every REGISTER_OP

// Throws for an unknown op, and for any failed registration. Graph::add resolves each node's op
// once (Node::def); passes read the definition there instead of looking it up again.
const OpDef& find(const std::string& name);

struct Registration {
  explicit Registration(OpDef def, std::source_location loc = std::source_location::current());
};

// Shorthand for infer functions: one output.
inline std::vector<TensorType> one(TensorType t) { return {std::move(t)}; }

}  // namespace tandem::ops

#define TANDEM_CONCAT_(a, b) a##b
#define TANDEM_CONCAT(a, b) TANDEM_CONCAT_(a, b)
#define REGISTER_OP(...) \
  static const ::tandem::ops::Registration TANDEM_CONCAT(op_registration_, __COUNTER__)(::tandem::ops::OpDef{__VA_ARGS__})
