// What a layer's call() emits into: the graph, the mode, and the model-wide values layers read.
#pragma once

#include "graph/graph.h"
#include "tandem/layer.h"

namespace tandem {

class CallContext {
 public:
  CallContext(graph::Graph& g, bool training, graph::Value step) : g(g), training(training), step(step) {}
  graph::Graph& g;
  bool training;          // Dropout and (later) BatchNormalization behave differently
  graph::Value step;      // the optimizer's iteration counter (int64 scalar), for dropout masks
  // How many micro-batches of a training step run this graph, one after another; values summed
  // over them with ops::micro_sum reach the step's update once.
  int micro_batches = 1;
  // The masks of the inputs of the layer being emitted, one per input (invalid: none), set by
  // whoever emits the call; a layer's emit and emit_output_masks read them. `mask_origin` names
  // the layer that made the first of them, for messages (`Embedding "emb" (mask_zero=True)`).
  std::vector<graph::Value> input_masks;
  std::string mask_origin;
  // Losses the layers add as they are emitted (Keras's add_loss: activity regularizers), scalars
  // the training and evaluation loss sums.
  std::vector<graph::Value> added_losses;
  // Keras's activity penalty of one output y: r's penalty of y divided by its batch size (the
  // whole step's: a micro-batch's rows times their count, so that the micro-batches' terms sum to
  // Keras's penalty of the batch), added to added_losses; a non-float y adds nothing. `owner`
  // names the layer and argument in errors. Layer calls add their outputs' (Layer.__call__); a
  // layer whose sublayers carry the regularizer (MultiHeadAttention) adds theirs.
  void add_activity_penalty(graph::Value y, const Regularizer& r, const std::string& owner);
  // Input i's mask, or an invalid value if it has none.
  graph::Value input_mask(std::size_t i) const { return i < input_masks.size() ? input_masks[i] : graph::Value{}; }

  graph::Value variable(const Variable& v) { return g.read_variable(v); }
};

}  // namespace tandem
