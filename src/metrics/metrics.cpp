#include "metrics/metrics.h"

#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::metrics {

namespace {
std::string resolve(const std::string& name, const Loss& loss) {
  if (name == "accuracy" || name == "acc") return loss.accuracy_metric();
  if (name == "mean_absolute_error") return "mae";
  if (name == "mean_squared_error") return "mse";
  return name;
}

// Targets as the predictions' float dtype with the same shape ((batch,) becomes (batch, 1)).
graph::Value dense_target(graph::Graph& g, graph::Value pred, graph::Value target) {
  const TensorType p = g.type(pred);
  return ops::cast(g, ops::reshape(g, target, p.shape), p.dtype);
}
}  // namespace

void check(const std::string& name, const Loss& loss) {
  const std::string r = resolve(name, loss);
  for (const char* known : {"sparse_categorical_accuracy", "categorical_accuracy", "binary_accuracy", "mae", "mse"})
    if (r == known) return;
  throw ValueError("compile: unknown metric '" + name +
                   "'; expected one of accuracy, sparse_categorical_accuracy, categorical_accuracy, binary_accuracy, mae, mse");
}

graph::Value per_sample(graph::Graph& g, const std::string& name, const Loss& loss, graph::Value pred, graph::Value target) {
  const std::string r = resolve(name, loss);
  if (r == "sparse_categorical_accuracy") return ops::equal(g, ops::argmax(g, pred), ops::cast(g, target, DType::I64));
  if (r == "categorical_accuracy") return ops::equal(g, ops::argmax(g, pred), ops::argmax(g, target));
  if (r == "binary_accuracy") return g.add("binary_accuracy", {pred, dense_target(g, pred, target)}, {{"threshold", 0.5}});
  if (r == "mae") return ops::absolute_error(g, pred, dense_target(g, pred, target));
  if (r == "mse") return ops::squared_error(g, pred, dense_target(g, pred, target));
  throw ValueError("unknown metric '" + name + "'");
}

}  // namespace tandem::metrics
