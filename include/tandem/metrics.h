// Metrics: compile takes their Keras names ("accuracy", "mae", "mse", "precision", "recall",
// "auc", "top_k_categorical_accuracy", ...; Keras's defaults: a 0.5 threshold, 200 AUC
// thresholds, k = 5), and the names of metrics registered here.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <source_location>
#include <string>

#include "tandem/layer.h"

namespace tandem::metrics {

// A metric written with tandem/ops.h (Keras's custom metric function, a MeanMetricWrapper):
// fn(y_true, y_pred) returns per-sample values (batch, ...) whose mean over an epoch is the
// metric. Registered under `name`, which compile's metrics lists and History then use.
using MetricFn = std::function<Symbol(const Symbol& y_true, const Symbol& y_pred)>;
void register_metric(const std::string& name, MetricFn fn, std::source_location where = std::source_location::current());

// Keras's stateful metrics with arguments. Each call returns the metric's name, which goes in
// compile's metrics list (and names its History entry): `.metrics = {metrics::F1Score({.average =
// "macro"})}`. The name stands for these arguments in this process: making the same name again with
// other arguments is a ValueError (give each variant its own name). Their values over an epoch are
// exact: the step keeps counts (summed over the replicas of a distribution strategy), and the
// metric is computed from the epoch's counts, as Keras's metric variables do. Saved in a model's
// compile_config as Keras's metric objects, and rebuilt by load_model.

struct F1ScoreOptions {
  // "micro" (counts over every class), "macro" (mean of the classes' F1), "weighted" (mean weighted
  // by each class's count of positives), or none: one F1 per class, in the logs and History as
  // `name[i]` for class i, with their mean under `name` (what Keras's progress bar shows).
  std::optional<std::string> average{};
  // A prediction counts as positive above it; none: the row's largest prediction is its positive
  // (Keras's default).
  std::optional<double> threshold{};
  std::string name = "f1_score";
};
// Predictions and targets (batch, classes). F1 = 2·P·R/(P + R) with Keras's 1e-7 terms.
std::string F1Score(const F1ScoreOptions& options = {});

struct R2ScoreOptions {
  // "uniform_average", "variance_weighted_average", or none: one score per output, logged as
  // F1Score's per-class values are (`name[i]`, and their mean under `name`).
  std::optional<std::string> class_aggregation = "uniform_average";
  int64_t num_regressors = 0;  // > 0: Keras's adjusted R², n being the count of target elements
  std::string name = "r2_score";
};
// Predictions and targets (batch, outputs): 1 − Σ(y − ŷ)²/Σ(y − ȳ)² per output, aggregated.
std::string R2Score(const R2ScoreOptions& options = {});

struct MeanIoUOptions {
  bool sparse_y_true = true;  // targets are class ids; false: one-hot, their argmax is taken
  // Predictions are class ids (Keras's default; floats are truncated); false for a model whose
  // output is scores (batch, classes): their argmax is taken.
  bool sparse_y_pred = true;
  std::optional<int64_t> ignore_class{};  // targets of this class are not counted
  std::string name = "mean_io_u";
};
// The mean over classes (those present in targets or predictions) of TP/(TP + FP + FN), from the
// epoch's confusion matrix (num_classes × num_classes).
std::string MeanIoU(int64_t num_classes, const MeanIoUOptions& options = {});

}  // namespace tandem::metrics
