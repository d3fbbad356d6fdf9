// Loss functions (Keras 3 semantics: reduction "sum_over_batch_size", probabilities clipped to 1e-7).
#pragma once

#include <functional>
#include <memory>
#include <source_location>
#include <string>

#include "tandem/layer.h"

namespace tandem {

namespace graph {
class Graph;
struct Value;
}

class Loss {
 public:
  virtual ~Loss() = default;
  virtual std::string name() const = 0;  // "sparse_categorical_crossentropy"
  // The loss's arguments as a JSON object under Keras's names (name, reduction, from_logits): what
  // Model::save stores. The base class has none and throws ValueError.
  virtual std::string config_json() const;
  // Whether targets are integer class ids.
  virtual bool sparse_targets() const { return false; }
  // The accuracy metric that "accuracy" means with this loss.
  virtual std::string accuracy_metric() const { return "categorical_accuracy"; }
  // Library use: per-sample losses, shape (batch, ...) without the class axis.
  virtual graph::Value per_sample(graph::Graph& g, const graph::Value& pred, const graph::Value& target) const = 0;
};
using LossPtr = std::shared_ptr<Loss>;

namespace losses {

// label_smoothing (CategoricalCrossentropy, BinaryCrossentropy; Keras's): targets become
// t·(1 − ls) + ls/classes (categorical) or t·(1 − ls) + ls/2 (binary) before the loss. The sparse
// loss takes none (ValueError otherwise), as in Keras.
struct CrossentropyOptions { bool from_logits = false; double label_smoothing = 0.0; };

LossPtr SparseCategoricalCrossentropy(const CrossentropyOptions& options = {});
LossPtr CategoricalCrossentropy(const CrossentropyOptions& options = {});
LossPtr BinaryCrossentropy(const CrossentropyOptions& options = {});
LossPtr MeanSquaredError();
LossPtr MeanAbsoluteError();
// Keras's regression and probabilistic losses, each per sample over the last axis (Keras's formulas):
//   Huber         mean of ½e² where |e| ≤ delta, delta·|e| − ½delta² beyond (e = pred − target)
//   LogCosh       mean of log(cosh(pred − target))
//   Poisson       mean of pred − target·log(pred + 1e-7)
//   KLDivergence  sum of t·log(t/p), target t and pred p clipped to [1e-7, 1]
LossPtr Huber(double delta = 1.0);
LossPtr LogCosh();
LossPtr Poisson();
LossPtr KLDivergence();
// Keras's string names ("sparse_categorical_crossentropy", "mse", "huber", "log_cosh", "poisson",
// "kl_divergence", "kld", ...) and the names given to
// register_loss; ValueError otherwise.
LossPtr get(const std::string& name);

// A loss written with tandem/ops.h (Keras's custom loss function): fn(y_true, y_pred) returns the
// per-sample losses, shape (batch, ...), which compile averages over every element (Keras's
// "sum_over_batch_size"). y_true has the targets' dtype as the data gives it. The loss is
// registered under `name`, so get(name) and load_model find it; register each name once.
using LossFn = std::function<Symbol(const Symbol& y_true, const Symbol& y_pred)>;
LossPtr register_loss(const std::string& name, LossFn fn, std::source_location where = std::source_location::current());

}  // namespace losses
}  // namespace tandem
