// Traced symbols: the tensors a custom layer's call() and a loss function compute with.
#include "layer_base/call_context.h"
#include "layer_base/symbol.h"
#include "tandem/errors.h"

namespace tandem {

namespace {
thread_local const std::shared_ptr<Trace>* current = nullptr;
}

TraceScope::TraceScope(graph::Graph& g, CallContext* ctx, Layer* layer, std::string owner)
    : trace_(std::make_shared<Trace>(Trace{g, ctx, layer, std::move(owner)})), previous_(current) {
  current = &trace_;
}

TraceScope::~TraceScope() {
  trace_->open = false;
  current = previous_;
}

Symbol traced_symbol(const std::shared_ptr<Trace>& trace, graph::Value v) {
  auto node = std::make_shared<Symbol::Node>();
  const TensorType& t = trace->g.type(v);
  node->shape = t.shape;
  node->dtype = t.dtype;
  node->trace = trace;
  node->value = v;
  return Symbol(node);
}

Symbol TraceScope::symbol(graph::Value v) const { return traced_symbol(trace_, v); }

graph::Value TraceScope::value(const Symbol& s, const std::string& what) const {
  if (!s.node()) throw ValueError(trace_->owner + ": " + what + " is an empty Symbol");
  if (s.node()->trace != trace_)
    throw ValueError(trace_->owner + ": " + what +
                     " must be computed from the call's inputs and weights, not a symbol of a model or of another call");
  return s.node()->value;
}

std::shared_ptr<Trace> common_trace(const std::vector<Symbol>& xs, const std::string& op) {
  std::shared_ptr<Trace> found;
  bool model_symbols = false;
  for (const Symbol& s : xs) {
    if (!s.node()) throw ValueError(op + ": called on an empty Symbol");
    const std::shared_ptr<Trace>& t = s.node()->trace;
    if (!t) {
      model_symbols = true;
      continue;
    }
    if (!t->open)
      throw ValueError(op + ": a symbol of " + t->owner + "'s call is used after that call ended; keep weights, not symbols, between calls");
    if (found && found != t) throw ValueError(op + ": mixes symbols of " + found->owner + "'s call and of " + t->owner + "'s call");
    found = t;
  }
  if (found && model_symbols)
    throw ValueError(op + ": mixes symbols of " + found->owner + "'s call with a model's symbols (from Input() or a layer " +
                     "called outside any call); inside call() use only its inputs, weights and what is computed from them");
  return found;
}

Symbol::Symbol(const VariablePtr& weight) {
  if (!weight) throw ValueError("Symbol: made from an empty weight pointer");
  if (!current || !(*current)->ctx)
    throw ValueError("weight \"" + weight->path() + "\" is used as a Symbol outside a Layer's call(); weights are symbols only there");
  *this = traced_symbol(*current, (*current)->ctx->variable(*weight));
}

}  // namespace tandem
