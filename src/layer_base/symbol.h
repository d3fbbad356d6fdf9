// The recorded functional graph (which layer produced a symbol from which inputs), and the traced
// symbols a custom layer's call computes with.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "tandem/layer.h"

namespace tandem {

class CallContext;

// One traced call of a custom layer's call() (or of a loss function) into a graph. Its symbols
// are valid only while it is open: a symbol kept past its call is refused by name.
struct Trace {
  graph::Graph& g;
  CallContext* ctx;   // null in a loss function: no weights, layers or training flag there
  Layer* layer;       // the layer whose call this is (null in a loss); layers called in it are its sublayers
  std::string owner;  // for messages: `ResidualDense "res"`, `loss "huber"`
  bool open = true;
};

// One output of one layer call (or a model input, or a traced symbol). A call's node is its
// output 0 and holds the layer and the inputs; its other outputs are nodes that refer to it
// (`call`) with their `index`, and hold the layer but no inputs.
struct Symbol::Node {
  std::shared_ptr<Layer> layer;  // null for a model input and for a traced symbol
  std::vector<Symbol> inputs;    // on the call's node only
  Shape shape;                   // batch dimension -1 (a traced symbol: the traced batch)
  DType dtype = DType::F32;
  std::string input_name;        // for model inputs
  std::shared_ptr<Trace> trace;  // set for a traced symbol, whose value is `value`
  graph::Value value;
  std::shared_ptr<Node> call;    // output index > 0: the call's node; null otherwise
  int index = 0;                 // which output of its call this is
  std::vector<Shape> output_shapes;  // on the call's node: every output's shape (batch -1)
  // The mask the symbol carries, if any: its shape (batch -1) and the layer that made it.
  bool masked = false;
  Shape mask_shape;
  std::string mask_origin;
  const Node* call_node() const { return call ? call.get() : this; }
  std::size_t output_count() const { return call_node()->output_shapes.size(); }
};

// The values and masks (invalid: none) of one emitted call.
struct EmittedCall {
  std::vector<graph::Value> values, masks;
};
// Emits `layer`'s call on `inputs` into ctx's graph, whose ctx.input_masks the caller has set
// (and sized to the inputs), and checks what the layer returns.
EmittedCall emit_call(Layer& layer, CallContext& ctx, const std::vector<graph::Value>& inputs);

// Unique name "dense", "dense_1", ... per prefix, like Keras's auto-naming.
std::string unique_layer_name(const std::string& prefix);

// Opens a trace and makes it the thread's current one (for weights used as symbols) until the
// scope ends; nested layers' traces stack.
class TraceScope {
 public:
  TraceScope(graph::Graph& g, CallContext* ctx, Layer* layer, std::string owner);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
  const std::shared_ptr<Trace>& trace() const { return trace_; }
  Symbol symbol(graph::Value v) const;  // a traced symbol of this trace
  // The graph value of `s`, which must be a symbol of this trace; `what` names it for errors.
  graph::Value value(const Symbol& s, const std::string& what) const;

 private:
  std::shared_ptr<Trace> trace_;
  const std::shared_ptr<Trace>* previous_;
};

Symbol traced_symbol(const std::shared_ptr<Trace>& trace, graph::Value v);
// The open trace that the traced ones among `xs` share; null if none of them is traced. Throws
// ValueError (naming `op`) for a closed trace, symbols of two traces, or traced symbols mixed
// with a model's symbols.
std::shared_ptr<Trace> common_trace(const std::vector<Symbol>& xs, const std::string& op);

}  // namespace tandem
