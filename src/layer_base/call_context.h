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

  graph::Value variable(const Variable& v) {
    return g.variable({v.id(), v.path(), v.value().type(), v.trainable()});
  }
};

}  // namespace tandem
