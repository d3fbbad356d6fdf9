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
std::string loss_config(const std::string& name, std::optional<bool> from_logits) {
  nlohmann::ordered_json c{{"name", name}, {"reduction", "sum_over_batch_size"}};
  if (from_logits) c["from_logits"] = *from_logits;
  return c.dump();
}

class Crossentropy : public Loss {
 public:
  Crossentropy(std::string name, bool sparse, bool from_logits) : name_(std::move(name)), sparse_(sparse), logits_(from_logits) {}
  std::string name() const override { return name_; }
  bool sparse_targets() const override { return sparse_; }
  std::string config_json() const override { return loss_config(name_, logits_); }
  std::string accuracy_metric() const override { return sparse_ ? "sparse_categorical_accuracy" : "categorical_accuracy"; }
  graph::Value per_sample(graph::Graph& g, const graph::Value& pred, const graph::Value& target) const override {
    return ops::cross_entropy(g, pred, target, sparse_, logits_);
  }

 private:
  std::string name_;
  bool sparse_, logits_;
};

// Losses averaged over the last axis of same-shaped predictions and targets.
class Elementwise : public Loss {
 public:
  enum Kind { Binary, Squared, Absolute };
  Elementwise(std::string name, Kind kind, bool from_logits = false) : name_(std::move(name)), kind_(kind), logits_(from_logits) {}
  std::string name() const override { return name_; }
  std::string accuracy_metric() const override { return "binary_accuracy"; }
  std::string config_json() const override { return loss_config(name_, kind_ == Binary ? std::optional<bool>(logits_) : std::nullopt); }
  graph::Value per_sample(graph::Graph& g, const graph::Value& pred, const graph::Value& target) const override {
    graph::Value t = target;
    const TensorType& p = g.type(pred);
    // Keras accepts targets (batch,) for predictions (batch, 1): give them the trailing axis.
    if (g.type(t).shape.rank() + 1 == p.shape.rank() && p.shape.back() == 1) t = ops::reshape(g, t, p.shape);
    t = ops::cast(g, t, p.dtype);
    switch (kind_) {
      case Binary: return ops::binary_cross_entropy(g, pred, t, logits_);
      case Squared: return ops::squared_error(g, pred, t);
      case Absolute: return ops::absolute_error(g, pred, t);
    }
    return {};
  }

 private:
  std::string name_;
  Kind kind_;
  bool logits_;
};
}  // namespace

LossPtr SparseCategoricalCrossentropy(const CrossentropyOptions& o) {
  return std::make_shared<Crossentropy>("sparse_categorical_crossentropy", true, o.from_logits);
}
LossPtr CategoricalCrossentropy(const CrossentropyOptions& o) {
  return std::make_shared<Crossentropy>("categorical_crossentropy", false, o.from_logits);
}
LossPtr BinaryCrossentropy(const CrossentropyOptions& o) {
  return std::make_shared<Elementwise>("binary_crossentropy", Elementwise::Binary, o.from_logits);
}
LossPtr MeanSquaredError() { return std::make_shared<Elementwise>("mean_squared_error", Elementwise::Squared); }
LossPtr MeanAbsoluteError() { return std::make_shared<Elementwise>("mean_absolute_error", Elementwise::Absolute); }

LossPtr get(const std::string& name) {
  if (name == "sparse_categorical_crossentropy") return SparseCategoricalCrossentropy();
  if (name == "categorical_crossentropy") return CategoricalCrossentropy();
  if (name == "binary_crossentropy") return BinaryCrossentropy();
  if (name == "mse" || name == "mean_squared_error") return MeanSquaredError();
  if (name == "mae" || name == "mean_absolute_error") return MeanAbsoluteError();
  if (LossPtr custom = registered_loss(name)) return custom;
  throw ValueError("compile: unknown loss '" + name +
                   "'; expected one of sparse_categorical_crossentropy, categorical_crossentropy, binary_crossentropy, "
                   "mean_squared_error (mse), mean_absolute_error (mae), or a name given to losses::register_loss");
}

}  // namespace tandem::losses
