#include "metrics/metrics.h"

#include <map>
#include <mutex>

#include "core/registry.h"
#include "layer_base/symbol.h"
#include "metrics/stateful.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/metrics.h"

namespace tandem::metrics {

namespace {
constexpr int64_t kAucThresholds = 200;  // Keras's AUC default
constexpr int64_t kTopK = 5;             // Keras's top-k default

std::string resolve(const std::string& name, const Loss& loss) {
  if (name == "accuracy" || name == "acc") return loss.accuracy_metric();
  if (name == "mean_absolute_error") return "mae";
  if (name == "mean_squared_error") return "mse";
  return name;
}

// Targets as the predictions' float dtype with the same shape ((batch,) becomes (batch, 1)).
graph::Value dense_target(graph::Graph& g, graph::Value pred, graph::Value target, const std::string& metric) {
  const TensorType p = g.type(pred), t = g.type(target);
  if (t.shape.num_elements() != p.shape.num_elements())
    throw ShapeError("metric '" + metric + "': expected targets shaped like the predictions " + p.shape.without_batch().with_batch(-1).str() +
                     ", got " + t.shape.without_batch().with_batch(-1).str() + " (class ids need a sparse metric, or to_categorical)");
  return ops::cast(g, ops::reshape(g, target, p.shape), p.dtype);
}

struct MetricRegistry : core::Registry<std::string, MetricFn> {
  MetricRegistry() : Registry("metric") {}
};
MetricRegistry& registry() {
  static MetricRegistry r;
  return r;
}

constexpr const char* kBuiltIn[] = {"sparse_categorical_accuracy", "categorical_accuracy", "binary_accuracy", "mae", "mse",
                                    "precision", "recall", "auc", "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy"};

// The AUC of the ROC curve from the counts above each threshold, by Keras's trapezoids
// (summation_method "interpolation").
double roc_auc(std::span<const double> s) {
  const std::size_t t = (s.size() - 2) / 2;
  const double positives = s[2 * t], negatives = s[2 * t + 1];
  auto rate = [](double part, double all) { return all > 0 ? part / all : 0.0; };
  double auc = 0;
  for (std::size_t k = 0; k + 1 < t; ++k) {
    const double x0 = rate(s[t + k], negatives), x1 = rate(s[t + k + 1], negatives);
    const double y0 = rate(s[k], positives), y1 = rate(s[k + 1], positives);
    auc += (x0 - x1) * (y0 + y1) / 2;
  }
  return auc;
}
}  // namespace

bool is_built_in(const std::string& name) {
  if (name == "accuracy" || name == "acc" || name == "mean_absolute_error" || name == "mean_squared_error") return true;
  for (const char* known : kBuiltIn)
    if (name == known) return true;
  return false;
}

void check(const std::string& name, const Loss& loss) {
  const std::string r = resolve(name, loss);
  for (const char* known : kBuiltIn)
    if (r == known) return;
  if (registry().find(r)) return;
  if (find_stateful(r)) return;
  std::string list = "accuracy";
  for (const char* known : kBuiltIn) list.append(", ").append(known);
  throw ValueError("compile: unknown metric '" + name + "'; expected one of " + list + ", a name given to metrics::register_metric, or a metric made with metrics::F1Score, R2Score or MeanIoU");
}

Emitted emit(graph::Graph& g, const std::string& name, const Loss& loss, graph::Value pred, graph::Value target, graph::Value mask) {
  const std::string r = resolve(name, loss);
  // The mask (batch, steps) as each prediction element's weight: pred is (batch, steps, ...).
  auto weight = [&]() -> graph::Value {
    if (!mask.valid()) return {};
    const TensorType p = g.type(pred);
    const Shape m = g.type(mask).shape;
    std::vector<int64_t> dims = m.dims();
    while (static_cast<int>(dims.size()) < p.shape.rank()) dims.push_back(1);
    return ops::broadcast_to(g, ops::reshape(g, ops::cast(g, mask, p.dtype), Shape(dims)), p.shape);
  };
  if (r == "sparse_categorical_accuracy") return {ops::equal(g, ops::argmax(g, pred), ops::cast(g, target, DType::I64))};
  if (r == "categorical_accuracy") return {ops::equal(g, ops::argmax(g, pred), ops::argmax(g, target))};
  if (r == "binary_accuracy") return {g.add("binary_accuracy", {pred, dense_target(g, pred, target, name)}, {{"threshold", 0.5}})};
  if (r == "mae") return {ops::absolute_error(g, pred, dense_target(g, pred, target, name))};
  if (r == "mse") return {ops::squared_error(g, pred, dense_target(g, pred, target, name))};
  if (r == "precision" || r == "recall")
    return {ops::confusion_counts(g, pred, dense_target(g, pred, target, name), 1, 0.5, weight()), false};
  if (r == "auc") return {ops::confusion_counts(g, pred, dense_target(g, pred, target, name), kAucThresholds, 0.5, weight()), false};
  if (r == "sparse_top_k_categorical_accuracy") {
    const TensorType t = g.type(target);
    const graph::Value ids = t.shape.rank() == 2 ? ops::reshape(g, target, {t.shape[0]}) : target;
    return {ops::in_top_k(g, pred, ops::is_float(t.dtype) ? ops::cast(g, ids, DType::I64) : ids, kTopK)};
  }
  if (r == "top_k_categorical_accuracy") return {ops::in_top_k(g, pred, ops::argmax(g, target), kTopK)};
  if (const StatefulPtr m = find_stateful(r)) {
    if (mask.valid())
      throw ValueError("metric \"" + name + "\" (" + m->class_name() + "): the output carries a mask; " + m->class_name() +
                       " takes (batch, classes) outputs without one");
    return {m->counts(g, pred, target, {}), false};
  }
  const MetricFn* fn = registry().find(r);
  if (!fn) throw ValueError("unknown metric '" + name + "'");
  TraceScope scope(g, nullptr, nullptr, "metric \"" + r + "\"");
  const graph::Value per = scope.value((*fn)(scope.symbol(target), scope.symbol(pred)), "the metric function's result");
  const TensorType& pt = g.type(per);
  if (pt.shape.rank() < 1 || pt.shape[0] != g.type(pred).shape[0] || !ops::is_float(pt.dtype))
    throw ShapeError("metric \"" + r + "\": the function must return per-sample float values of shape (" +
                     std::to_string(g.type(pred).shape[0]) + ", ...), got " + dtype_name(pt.dtype) + " " + pt.shape.str());
  return {per};
}

std::size_t sums(const std::string& name, const Loss& loss, const Shape& output) {
  const std::string r = resolve(name, loss);
  if (const StatefulPtr m = find_stateful(r)) return m->sums(output);
  if (r == "precision" || r == "recall") return 4;
  if (r == "auc") return 2 * kAucThresholds + 2;
  return 1;
}

std::vector<double> result(const std::string& name, const Loss& loss, std::span<const double> s, int64_t rows) {
  const std::string r = resolve(name, loss);
  // Counts: [positives above, negatives above, positives, negatives].
  if (r == "precision") return {s[0] + s[1] > 0 ? s[0] / (s[0] + s[1]) : 0.0};
  if (r == "recall") return {s[2] > 0 ? s[0] / s[2] : 0.0};
  if (r == "auc") return {roc_auc(s)};
  if (const StatefulPtr m = find_stateful(r)) return m->result(s, rows);
  return {rows ? s[0] / double(rows) : 0.0};
}

void register_metric(const std::string& name, MetricFn fn, std::source_location where) {
  if (name.empty()) throw ValueError("register_metric: the name is empty");
  if (!fn) throw ValueError("register_metric(\"" + name + "\"): the function is empty");
  for (const char* known : kBuiltIn)
    if (name == known || name == "accuracy") throw ValueError("register_metric: \"" + name + "\" is a built-in metric's name; choose another");
  if (find_stateful(name)) throw ValueError("register_metric: \"" + name + "\" names a metric made with F1Score, R2Score or MeanIoU; choose another");
  registry().add(name, std::move(fn), where);
}

}  // namespace tandem::metrics
