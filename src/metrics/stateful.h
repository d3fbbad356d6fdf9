// Keras's stateful metrics with arguments (F1Score, R2Score, MeanIoU): each keeps counts that the
// step sums over its rows (a vector the strategy sums over replicas and fit over batches) and
// computes the metric from an epoch's counts. compile refers to one by the name it was made with.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tandem::metrics {

class StatefulMetric {
 public:
  virtual ~StatefulMetric() = default;
  virtual std::string name() const = 0;
  virtual std::string class_name() const = 0;       // Keras's: "F1Score"
  virtual nlohmann::ordered_json config() const = 0;  // Keras's get_config
  // How many counts for predictions of this shape (batch -1).
  virtual std::size_t sums(const Shape& pred) const = 0;
  // The batch's counts, shape (sums,): each row counted by its weight (batch,) when valid (Keras's
  // sample_weight), else once.
  virtual graph::Value counts(graph::Graph& g, graph::Value pred, graph::Value target, graph::Value weight) const = 0;
  // The metric from counts summed over `rows` rows: one value, or one per class / output.
  virtual std::vector<double> result(std::span<const double> sums, int64_t rows) const = 0;
};
using StatefulPtr = std::shared_ptr<const StatefulMetric>;

// The metric made under this name, or null.
StatefulPtr find_stateful(const std::string& name);
// A Keras metric object's config ({"class_name", "config"}) made into the metric: registered under
// its name, which is returned. ValueError for a class other than F1Score, R2Score and MeanIoU.
std::string stateful_from_config(const nlohmann::ordered_json& object);

}  // namespace tandem::metrics
