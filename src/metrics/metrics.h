// Metrics by Keras name. Every built-in metric is a mean over samples, so the graph emits the
// per-batch sum and fit keeps the running mean.
#pragma once

#include <string>

#include "graph/graph.h"
#include "tandem/losses.h"

namespace tandem::metrics {

// Checks a metric name against the loss ("accuracy" resolves by the loss); ValueError if unknown.
void check(const std::string& name, const Loss& loss);
// Per-sample metric values (float), shape (batch, ...).
graph::Value per_sample(graph::Graph& g, const std::string& name, const Loss& loss, graph::Value pred, graph::Value target);

}  // namespace tandem::metrics
