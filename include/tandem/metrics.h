// Metrics: compile takes their Keras names ("accuracy", "mae", "mse", "precision", "recall",
// "auc", "top_k_categorical_accuracy", ...; Keras's defaults: a 0.5 threshold, 200 AUC
// thresholds, k = 5), and the names of metrics registered here.
#pragma once

#include <functional>
#include <source_location>
#include <string>

#include "tandem/layer.h"

namespace tandem::metrics {

// A metric written with tandem/ops.h (Keras's custom metric function, a MeanMetricWrapper):
// fn(y_true, y_pred) returns per-sample values (batch, ...) whose mean over an epoch is the
// metric. Registered under `name`, which compile's metrics lists and History then use.
using MetricFn = std::function<Symbol(const Symbol& y_true, const Symbol& y_pred)>;
void register_metric(const std::string& name, MetricFn fn, std::source_location where = std::source_location::current());

}  // namespace tandem::metrics
