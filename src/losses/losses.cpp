// The loss classes: each maps (predictions, targets) to per-sample losses with one fused op.
#include <nlohmann/json.hpp>
#include <optional>

#include "graph/graph.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "losses/custom_loss.h"
#include "tandem/losses.h"

namespace tandem {

std::string Loss::config_json() const {
  throw ValueError("loss \"" + name() + "\" has no config (it does not override config_json), so Model::save cannot store it");
}

}  // namespace tandem

namespace tandem::losses {

namespace {
// Keras's get_config: name and reduction, then the class's own arguments.
nlohmann::ordered_json loss_config(const std::string& name) { return {{"name", name}, {"reduction", "sum_over_batch_size"}}; }
// CategoricalCrossentropy's and BinaryCrossentropy's.
std::string crossentropy_config(const std::string& name, bool from_logits, double label_smoothing) {
  nlohmann::ordered_json c = loss_config(name);
  c.update({{"from_logits", from_logits}, {"label_smoothing", label_smoothing}, {"axis", -1}});
  return c.dump();
}

void check_label_smoothing(const char* who, double ls) {
  if (!(ls >= 0 && ls <= 1)) throw ValueError(std::string(who) + ": label_smoothing must be in [0, 1], got " + std::to_string(ls));
}

// Keras's smoothing of dense targets: t·(1 − ls) + ls·`share` (1/classes for categorical
// targets, 0.5 for binary ones). Ops on the targets, so the loss's gradient is unchanged.
graph::Value smooth(graph::Graph& g, graph::Value target, double ls, double share) {
  if (ls == 0) return target;
  const DType dtype = g.type(target).dtype;
  return ops::add(g, ops::scale(g, target, 1 - ls), ops::fill(g, {Shape{}, dtype}, ls * share));
}

class Crossentropy : public Loss {
 public:
  Crossentropy(std::string name, bool sparse, bool from_logits, double label_smoothing = 0)
      : name_(std::move(name)), sparse_(sparse), logits_(from_logits), smoothing_(label_smoothing) {}
  std::string name() const override { return name_; }
  bool sparse_targets() const override { return sparse_; }
  std::string config_json() const override {
    if (!sparse_) return crossentropy_config(name_, logits_, smoothing_);
    nlohmann::ordered_json c = loss_config(name_);
    c["from_logits"] = logits_;
    return c.dump();
  }
  std::string accuracy_metric() const override { return sparse_ ? "sparse_categorical_accuracy" : "categorical_accuracy"; }
  graph::Value per_sample(graph::Graph& g, const graph::Value& pred, const graph::Value& target) const override {
    if (sparse_ || smoothing_ == 0) return ops::cross_entropy(g, pred, target, sparse_, logits_);
    const TensorType& p = g.type(pred);
    const graph::Value t = smooth(g, ops::cast(g, target, p.dtype), smoothing_, 1.0 / double(p.shape.back()));
    return ops::cross_entropy(g, pred, t, false, logits_);
  }

 private:
  std::string name_;
  bool sparse_, logits_;
  double smoothing_;
};

// Losses averaged over the last axis of same-shaped predictions and targets.
class Elementwise : public Loss {
 public:
  enum Kind { Binary, Squared, Absolute, Huber, LogCosh, Poisson, KlDivergence };
  // `param`: BinaryCrossentropy's label_smoothing, Huber's delta.
  Elementwise(std::string name, Kind kind, bool from_logits = false, double param = 0)
      : name_(std::move(name)), kind_(kind), logits_(from_logits), param_(param) {}
  std::string name() const override { return name_; }
  std::string accuracy_metric() const override { return "binary_accuracy"; }
  std::string config_json() const override {
    if (kind_ == Binary) return crossentropy_config(name_, logits_, param_);
    nlohmann::ordered_json c = loss_config(name_);
    // Keras's Huber.get_config leaves delta out (a Keras file always means 1.0); Keras's
    // from_config takes it, so it is written to keep another delta.
    if (kind_ == Huber) c["delta"] = param_;
    return c.dump();
  }
  graph::Value per_sample(graph::Graph& g, const graph::Value& pred, const graph::Value& target) const override {
    graph::Value t = target;
    const TensorType& p = g.type(pred);
    // Keras accepts targets (batch,) for predictions (batch, 1): give them the trailing axis.
    if (g.type(t).shape.rank() + 1 == p.shape.rank() && p.shape.back() == 1) t = ops::reshape(g, t, p.shape);
    t = ops::cast(g, t, p.dtype);
    switch (kind_) {
      case Binary: return ops::binary_cross_entropy(g, pred, smooth(g, t, param_, 0.5), logits_);
      case Squared: return ops::squared_error(g, pred, t);
      case Absolute: return ops::absolute_error(g, pred, t);
      case Huber: return ops::huber(g, pred, t, param_);
      case LogCosh: return ops::log_cosh(g, pred, t);
      case Poisson: return ops::poisson(g, pred, t);
      case KlDivergence: return ops::kl_divergence(g, pred, t);
    }
    return {};
  }

 private:
  std::string name_;
  Kind kind_;
  bool logits_;
  double param_;
};
}  // namespace

LossPtr SparseCategoricalCrossentropy(const CrossentropyOptions& o) {
  if (o.label_smoothing != 0)
    throw ValueError("SparseCategoricalCrossentropy: label_smoothing is not an argument of the sparse loss (Keras has none); got " +
                     std::to_string(o.label_smoothing) + ". Use CategoricalCrossentropy with one-hot targets to smooth labels");
  return std::make_shared<Crossentropy>("sparse_categorical_crossentropy", true, o.from_logits);
}
LossPtr CategoricalCrossentropy(const CrossentropyOptions& o) {
  check_label_smoothing("CategoricalCrossentropy", o.label_smoothing);
  return std::make_shared<Crossentropy>("categorical_crossentropy", false, o.from_logits, o.label_smoothing);
}
LossPtr BinaryCrossentropy(const CrossentropyOptions& o) {
  check_label_smoothing("BinaryCrossentropy", o.label_smoothing);
  return std::make_shared<Elementwise>("binary_crossentropy", Elementwise::Binary, o.from_logits, o.label_smoothing);
}
LossPtr MeanSquaredError() { return std::make_shared<Elementwise>("mean_squared_error", Elementwise::Squared); }
LossPtr MeanAbsoluteError() { return std::make_shared<Elementwise>("mean_absolute_error", Elementwise::Absolute); }
LossPtr Huber(double delta) {
  if (!(delta >= 0)) throw ValueError("Huber: delta must be >= 0, got " + std::to_string(delta));
  return std::make_shared<Elementwise>("huber_loss", Elementwise::Huber, false, delta);
}
LossPtr LogCosh() { return std::make_shared<Elementwise>("log_cosh", Elementwise::LogCosh); }
LossPtr Poisson() { return std::make_shared<Elementwise>("poisson", Elementwise::Poisson); }
LossPtr KLDivergence() { return std::make_shared<Elementwise>("kl_divergence", Elementwise::KlDivergence); }

LossPtr get(const std::string& name) {
  if (name == "sparse_categorical_crossentropy") return SparseCategoricalCrossentropy();
  if (name == "categorical_crossentropy") return CategoricalCrossentropy();
  if (name == "binary_crossentropy") return BinaryCrossentropy();
  if (name == "mse" || name == "mean_squared_error") return MeanSquaredError();
  if (name == "mae" || name == "mean_absolute_error") return MeanAbsoluteError();
  if (name == "huber") return Huber();
  if (name == "log_cosh") return LogCosh();
  if (name == "poisson") return Poisson();
  if (name == "kl_divergence" || name == "kld" || name == "KLD") return KLDivergence();
  if (LossPtr custom = registered_loss(name)) return custom;
  throw ValueError("compile: unknown loss '" + name +
                   "'; expected one of sparse_categorical_crossentropy, categorical_crossentropy, binary_crossentropy, "
                   "mean_squared_error (mse), mean_absolute_error (mae), huber, log_cosh, poisson, kl_divergence (kld), or a name given to losses::register_loss");
}

}  // namespace tandem::losses
