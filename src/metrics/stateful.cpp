// F1Score, R2Score and MeanIoU with Keras 3's formulas (keras/src/metrics/f_score_metrics.py,
// regression_metrics.py, iou_metrics.py). The counts are composed ops: sums over the batch axis,
// so every backend runs them and a strategy sums its replicas' counts.
#include "metrics/stateful.h"

#include <cmath>
#include <map>
#include <mutex>

#include "metrics/metrics.h"
#include "ops/attention.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/metrics.h"

namespace tandem::metrics {

namespace {
constexpr double kEpsilon = 1e-7;  // Keras's backend epsilon

using ordered_json = nlohmann::ordered_json;

graph::Value constant(graph::Graph& g, graph::Value like, double v) { return ops::fill(g, {Shape{}, g.type(like).dtype}, v); }

// Σ over the batch axis of x (batch, k): (k,).
graph::Value batch_sum(graph::Graph& g, graph::Value x) { return ops::reduce_sum(g, x, {0}); }

// x (batch, k) times the row weights (batch,), when given.
graph::Value weigh(graph::Graph& g, graph::Value x, graph::Value weight) {
  if (!weight.valid()) return x;
  return ops::mul(g, x, ops::reshape(g, ops::cast(g, weight, g.type(x).dtype), {g.type(x).shape[0], 1}));
}

// Predictions and targets of shape (batch, k), the targets in the predictions' dtype.
std::pair<graph::Value, graph::Value> two_d(graph::Graph& g, graph::Value pred, graph::Value target, const std::string& who) {
  const TensorType p = g.type(pred), t = g.type(target);
  if (p.shape.rank() != 2 || !ops::is_float(p.dtype))
    throw ShapeError(who + " expects float predictions (batch_size, output_dim), got " + dtype_name(p.dtype) + " " +
                     p.shape.without_batch().with_batch(-1).str());
  if (t.shape.num_elements() != p.shape.num_elements())
    throw ShapeError(who + " expects targets shaped like the predictions " + p.shape.without_batch().with_batch(-1).str() + ", got " +
                     t.shape.without_batch().with_batch(-1).str());
  return {pred, ops::cast(g, ops::reshape(g, target, p.shape), p.dtype)};
}

std::string average_text(const std::optional<std::string>& v) { return v ? "\"" + *v + "\"" : std::string("none"); }

class F1 : public StatefulMetric {
 public:
  explicit F1(F1ScoreOptions o) : o_(std::move(o)) {
    if (o_.average && *o_.average != "micro" && *o_.average != "macro" && *o_.average != "weighted")
      throw ValueError("F1Score: average must be none, \"micro\", \"macro\" or \"weighted\", got " + average_text(o_.average));
    if (o_.threshold && !(*o_.threshold > 0 && *o_.threshold <= 1))
      throw ValueError("F1Score: threshold must be in (0, 1], got " + std::to_string(*o_.threshold));
  }
  std::string name() const override { return o_.name; }
  std::string class_name() const override { return "F1Score"; }
  ordered_json config() const override {
    return {{"name", o_.name}, {"dtype", "float32"}, {"average", o_.average ? ordered_json(*o_.average) : ordered_json(nullptr)},
            {"threshold", o_.threshold ? ordered_json(*o_.threshold) : ordered_json(nullptr)}};
  }
  std::size_t sums(const Shape& pred) const override { return 4 * static_cast<std::size_t>(pred.back()); }
  // Per class: true positives, false positives, false negatives, and Σ targets (the weights of
  // "weighted").
  graph::Value counts(graph::Graph& g, graph::Value pred, graph::Value target, graph::Value weight) const override {
    auto [p, t] = two_d(g, pred, target, "F1Score");
    graph::Value positive;
    if (o_.threshold) {
      positive = ops::compare(g, "greater", p, constant(g, p, *o_.threshold));
    } else {  // the row's largest prediction, unless it is 0 (a row of zeros predicts nothing)
      positive = ops::mul(g, ops::compare(g, "greater_equal", p, ops::reduce_max(g, p, {1}, true)),
                          ops::compare(g, "greater", ops::abs(g, p), constant(g, p, 1e-9)));
    }
    const graph::Value one = constant(g, p, 1.0);
    const graph::Value tp = ops::mul(g, positive, t);
    const graph::Value fp = ops::mul(g, positive, ops::sub(g, one, t));
    const graph::Value fn = ops::mul(g, ops::sub(g, one, positive), t);
    return ops::concat(g, {batch_sum(g, weigh(g, tp, weight)), batch_sum(g, weigh(g, fp, weight)), batch_sum(g, weigh(g, fn, weight)),
                           batch_sum(g, weigh(g, t, weight))},
                       0);
  }
  std::vector<double> result(std::span<const double> s, int64_t) const override {
    const std::size_t c = s.size() / 4;
    std::vector<double> tp(s.begin(), s.begin() + c), fp(s.begin() + c, s.begin() + 2 * c), fn(s.begin() + 2 * c, s.begin() + 3 * c),
        support(s.begin() + 3 * c, s.end());
    if (o_.average == "micro") {  // Keras's counts are scalars then: every class summed
      double a = 0, b = 0, d = 0;
      for (std::size_t i = 0; i < c; ++i) a += tp[i], b += fp[i], d += fn[i];
      tp = {a}, fp = {b}, fn = {d};
    }
    std::vector<double> f1(tp.size());
    for (std::size_t i = 0; i < tp.size(); ++i) {
      const double precision = tp[i] / (tp[i] + fp[i] + kEpsilon), recall = tp[i] / (tp[i] + fn[i] + kEpsilon);
      f1[i] = precision * recall / (precision + recall + kEpsilon) * 2;  // β = 1
    }
    if (!o_.average) return f1;
    double out = 0;
    if (*o_.average == "weighted") {
      double total = 0;
      for (double w : support) total += w;
      for (std::size_t i = 0; i < c; ++i) out += f1[i] * (support[i] / (total + kEpsilon));
    } else {
      for (double v : f1) out += v;
      out /= double(f1.size());
    }
    return {out};
  }

 private:
  F1ScoreOptions o_;
};

class R2 : public StatefulMetric {
 public:
  explicit R2(R2ScoreOptions o) : o_(std::move(o)) {
    const auto& a = o_.class_aggregation;
    if (a && *a != "uniform_average" && *a != "variance_weighted_average")
      throw ValueError("R2Score: class_aggregation must be \"uniform_average\", \"variance_weighted_average\" or none, got " + average_text(a));
    if (o_.num_regressors < 0) throw ValueError("R2Score: num_regressors must be >= 0, got " + std::to_string(o_.num_regressors));
  }
  std::string name() const override { return o_.name; }
  std::string class_name() const override { return "R2Score"; }
  ordered_json config() const override {
    const auto& a = o_.class_aggregation;
    return {{"name", o_.name}, {"dtype", "float32"}, {"class_aggregation", a ? ordered_json(*a) : ordered_json(nullptr)},
            {"num_regressors", o_.num_regressors}};
  }
  std::size_t sums(const Shape& pred) const override { return 4 * static_cast<std::size_t>(pred.rank() == 1 ? 1 : pred.back()); }
  // Per output: Σ w·y, Σ w·y², Σ w·(y − ŷ)², Σ w.
  graph::Value counts(graph::Graph& g, graph::Value pred, graph::Value target, graph::Value weight) const override {
    if (g.type(pred).shape.rank() == 1) pred = ops::reshape(g, pred, {g.type(pred).shape[0], 1});
    auto [p, t] = two_d(g, pred, target, "R2Score");
    // Each element's weight: 1 (from t == t, so that the batch axis stays the rows' own), times
    // the row's weight when given.
    const graph::Value w = weigh(g, ops::compare(g, "equal_to", t, t), weight);
    const graph::Value wy = ops::mul(g, t, w);
    return ops::concat(g, {batch_sum(g, wy), batch_sum(g, ops::mul(g, t, wy)), batch_sum(g, ops::mul(g, ops::square(g, ops::sub(g, t, p)), w)),
                           batch_sum(g, w)},
                       0);
  }
  std::vector<double> result(std::span<const double> s, int64_t rows) const override {
    const std::size_t k = s.size() / 4;
    std::vector<double> raw(k), total(k);
    for (std::size_t i = 0; i < k; ++i) {
      const double sum = s[i], squared = s[k + i], residual = s[2 * k + i], count = s[3 * k + i];
      total[i] = squared - sum * (sum / count);
      raw[i] = 1 - residual / total[i];
      if (std::isinf(raw[i])) raw[i] = 0;  // Keras: where(isinf(raw), 0, raw)
    }
    std::vector<double> r2 = raw;
    if (o_.class_aggregation == "uniform_average") {
      double m = 0;
      for (double v : raw) m += v;
      r2 = {m / double(k)};
    } else if (o_.class_aggregation == "variance_weighted_average") {
      double num = 0, den = 0;
      for (std::size_t i = 0; i < k; ++i) num += total[i] * raw[i], den += total[i];
      r2 = {num / den};
    }
    // Keras's adjusted R², n counting target elements (rows · outputs); it falls back to the plain
    // score (with a warning) when n − 1 <= num_regressors.
    const double n = double(rows) * double(k), p = double(o_.num_regressors);
    if (o_.num_regressors != 0 && p < n - 1)
      for (double& v : r2) v = 1 - (1 - v) * (n - 1) / (n - p - 1);
    return r2;
  }

 private:
  R2ScoreOptions o_;
};

class IoU : public StatefulMetric {
 public:
  IoU(int64_t classes, MeanIoUOptions o) : classes_(classes), o_(std::move(o)) {
    if (classes < 1) throw ValueError("MeanIoU: num_classes must be positive, got " + std::to_string(classes));
  }
  std::string name() const override { return o_.name; }
  std::string class_name() const override { return "MeanIoU"; }
  ordered_json config() const override {
    return {{"num_classes", classes_},
            {"name", o_.name},
            {"dtype", "int32"},
            {"ignore_class", o_.ignore_class ? ordered_json(*o_.ignore_class) : ordered_json(nullptr)},
            {"sparse_y_true", o_.sparse_y_true},
            {"sparse_y_pred", o_.sparse_y_pred},
            {"axis", -1}};
  }
  std::size_t sums(const Shape&) const override { return static_cast<std::size_t>(classes_ * classes_); }
  // The batch's confusion matrix (true class, predicted class), flattened. Keras keeps it in int32:
  // weights are truncated to integers; ids outside [0, num_classes) count nowhere.
  graph::Value counts(graph::Graph& g, graph::Value pred, graph::Value target, graph::Value weight) const override {
    const DType f = ops::is_float(g.type(pred).dtype) ? g.type(pred).dtype : DType::F32;
    const int64_t batch = g.type(pred).shape[0];
    auto ids = [&](graph::Value v, bool sparse) {
      if (!sparse) v = ops::argmax(g, v);
      else if (ops::is_float(g.type(v).dtype)) v = ops::cast(g, v, DType::I64);  // truncates, as Keras's cast to int
      const int64_t per_row = g.type(v).shape.num_elements() / batch;
      return ops::reshape(g, v, {batch, per_row});
    };
    const graph::Value t_ids = ids(target, o_.sparse_y_true), p_ids = ids(pred, o_.sparse_y_pred);
    if (g.type(t_ids).shape != g.type(p_ids).shape)
      throw ShapeError("MeanIoU: targets give " + g.type(t_ids).shape.without_batch().with_batch(-1).str() + " class ids per batch, predictions " +
                       g.type(p_ids).shape.without_batch().with_batch(-1).str());
    const int64_t n = g.type(t_ids).shape[1];
    graph::Value t = ops::one_hot(g, t_ids, classes_, f);  // (batch, n, classes)
    const graph::Value p = ops::one_hot(g, p_ids, classes_, f);
    if (o_.ignore_class) {
      const graph::Value kept = ops::compare(g, "not_equal", ops::cast(g, t_ids, f), ops::fill(g, {Shape{}, f}, double(*o_.ignore_class)));
      t = ops::mul(g, t, ops::reshape(g, kept, {batch, n, 1}));
    }
    if (weight.valid()) {
      const graph::Value w = ops::cast(g, ops::cast(g, weight, DType::I64), f);  // int32 weights in Keras
      t = ops::mul(g, t, ops::reshape(g, w, {batch, 1, 1}));
    }
    const graph::Value cm = ops::batch_matmul(g, t, p, true, false);  // (batch, classes, classes)
    return ops::reshape(g, batch_sum(g, ops::reshape(g, cm, {batch, classes_ * classes_})), {classes_ * classes_});
  }
  std::vector<double> result(std::span<const double> cm, int64_t) const override {
    const auto c = static_cast<std::size_t>(classes_);
    double sum = 0, valid = 0;
    for (std::size_t i = 0; i < c; ++i) {
      double predicted = 0, actual = 0;
      for (std::size_t j = 0; j < c; ++j) predicted += cm[j * c + i], actual += cm[i * c + j];
      const double tp = cm[i * c + i], denominator = predicted + actual - tp;
      if (denominator > 1e-9) sum += tp / (denominator + kEpsilon), valid += 1;
    }
    return {sum / (valid + kEpsilon)};
  }

 private:
  int64_t classes_;
  MeanIoUOptions o_;
};

std::mutex& made_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, StatefulPtr>& made() {
  static std::map<std::string, StatefulPtr> m;
  return m;
}

// Registers the metric under its name; the same name again must mean the same metric.
std::string keep(StatefulPtr metric) {
  const std::string name = metric->name();
  if (name.empty()) throw ValueError(metric->class_name() + ": the name is empty");
  if (is_built_in(name)) throw ValueError(metric->class_name() + ": \"" + name + "\" is a built-in metric's name; choose another");
  std::lock_guard lock(made_mutex());
  auto [it, inserted] = made().emplace(name, metric);
  if (!inserted && (it->second->class_name() != metric->class_name() || it->second->config() != metric->config()))
    throw ValueError(metric->class_name() + ": the metric name \"" + name + "\" already stands for " + it->second->class_name() + " " +
                     it->second->config().dump() + "; give this one (" + metric->config().dump() + ") another name");
  return name;
}
}  // namespace

StatefulPtr find_stateful(const std::string& name) {
  std::lock_guard lock(made_mutex());
  const auto it = made().find(name);
  return it == made().end() ? nullptr : it->second;
}

std::string F1Score(const F1ScoreOptions& options) { return keep(std::make_shared<F1>(options)); }
std::string R2Score(const R2ScoreOptions& options) { return keep(std::make_shared<R2>(options)); }
std::string MeanIoU(int64_t num_classes, const MeanIoUOptions& options) { return keep(std::make_shared<IoU>(num_classes, options)); }

std::string stateful_from_config(const nlohmann::ordered_json& object) {
  const std::string cls = object.value("class_name", "");
  const nlohmann::ordered_json c = object.contains("config") ? object.at("config") : nlohmann::ordered_json::object();
  auto optional_string = [&](const char* key, std::optional<std::string> fallback) -> std::optional<std::string> {
    if (!c.contains(key)) return fallback;
    if (c.at(key).is_null()) return std::nullopt;
    if (!c.at(key).is_string()) throw ValueError(cls + " config: \"" + key + "\" must be a string or null, got " + c.at(key).dump());
    return c.at(key).get<std::string>();
  };
  auto name = [&](const char* fallback) {
    if (c.contains("name") && !c.at("name").is_string()) throw ValueError(cls + " config: \"name\" must be a string, got " + c.at("name").dump());
    return c.value("name", std::string(fallback));
  };
  try {
    if (cls == "F1Score") {
      std::optional<double> threshold;
      if (c.contains("threshold") && !c.at("threshold").is_null()) threshold = c.at("threshold").get<double>();
      return F1Score({.average = optional_string("average", std::nullopt), .threshold = threshold, .name = name("f1_score")});
    }
    if (cls == "R2Score")
      return R2Score({.class_aggregation = optional_string("class_aggregation", "uniform_average"),
                      .num_regressors = c.value("num_regressors", int64_t{0}),
                      .name = name("r2_score")});
    if (cls == "MeanIoU") {
      if (!c.contains("num_classes")) throw ValueError("MeanIoU config: \"num_classes\" is missing");
      if (c.value("axis", -1) != -1) throw ValueError("MeanIoU config: only axis -1 is supported, got " + c.at("axis").dump());
      std::optional<int64_t> ignore;
      if (c.contains("ignore_class") && !c.at("ignore_class").is_null()) ignore = c.at("ignore_class").get<int64_t>();
      return MeanIoU(c.at("num_classes").get<int64_t>(), {.sparse_y_true = c.value("sparse_y_true", true),
                                                           .sparse_y_pred = c.value("sparse_y_pred", true),
                                                           .ignore_class = ignore,
                                                           .name = name("mean_io_u")});
    }
  } catch (const nlohmann::ordered_json::exception& e) {
    throw ValueError(cls + " config: a value has the wrong type (" + e.what() + "): " + c.dump());
  }
  throw ValueError("training_config: unknown metric class \"" + cls + "\"; expected a metric name, F1Score, R2Score or MeanIoU");
}

}  // namespace tandem::metrics
