// Metrics by Keras name, and the ones users register. A metric's value over an epoch comes from
// sums the step takes over each batch: most are means of per-sample values (one sum, divided by
// the rows); Precision, Recall and AUC keep counts per threshold and combine them at the end.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "graph/graph.h"
#include "tandem/losses.h"

namespace tandem::metrics {

// Whether `name` is a built-in metric's ("accuracy", "mae", ...), which other metrics cannot take.
bool is_built_in(const std::string& name);

// Checks a metric name against the loss ("accuracy" resolves by the loss); ValueError if unknown.
void check(const std::string& name, const Loss& loss);

// What a metric emits for one batch: per-sample values (batch, ...), whose mean over an epoch's
// elements is the metric, or the batch's sums themselves (a vector of `sums` counts).
struct Emitted {
  graph::Value value;
  bool per_sample = true;
};
// `mask` (optional): the output's mask (batch, steps); the counting metrics (precision, recall,
// AUC) then count each element by it, as Keras weighs them. Per-sample values are returned
// unweighted: the caller weighs their mean.
Emitted emit(graph::Graph& g, const std::string& name, const Loss& loss, graph::Value pred, graph::Value target,
             graph::Value mask = {});

// How many sums the metric keeps for an output of this shape (batch -1): 1 for a mean.
std::size_t sums(const std::string& name, const Loss& loss, const Shape& output);
// The metric's value from its sums over `rows` rows: one number, or one per class (or output) for
// F1Score(average none) and R2Score(class_aggregation none).
std::vector<double> result(const std::string& name, const Loss& loss, std::span<const double> sums, int64_t rows);

}  // namespace tandem::metrics
