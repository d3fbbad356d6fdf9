// Losses written by users with tandem::ops: the function is traced into the step's graph on the
// targets and predictions, like a custom layer's call.
#include "core/registry.h"
#include "graph/graph.h"
#include "layer_base/symbol.h"
#include "losses/custom_loss.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::losses {

namespace {
class FunctionLoss : public Loss {
 public:
  FunctionLoss(std::string name, LossFn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::string name() const override { return name_; }
  std::string config_json() const override { return "{\"name\": \"" + name_ + "\"}"; }
  graph::Value per_sample(graph::Graph& g, const graph::Value& pred, const graph::Value& target) const override {
    TraceScope scope(g, nullptr, nullptr, "loss \"" + name_ + "\"");
    const graph::Value per = scope.value(fn_(scope.symbol(target), scope.symbol(pred)), "the loss function's result");
    const TensorType& t = g.type(per);
    const int64_t rows = g.type(pred).shape[0];
    if (t.shape.rank() < 1 || t.shape[0] != rows || !ops::is_float(t.dtype))
      throw ShapeError("loss \"" + name_ + "\": the function must return per-sample float losses of shape (" + std::to_string(rows) +
                       ", ...), got " + dtype_name(t.dtype) + " " + t.shape.str());
    return per;
  }

 private:
  std::string name_;
  LossFn fn_;
};

struct LossRegistry : core::Registry<std::string, LossPtr> {
  LossRegistry() : Registry("loss") {}
};
LossRegistry& registry() {
  static LossRegistry r;
  return r;
}
}  // namespace

LossPtr register_loss(const std::string& name, LossFn fn, std::source_location where) {
  if (name.empty()) throw ValueError("register_loss: the name is empty");
  if (!fn) throw ValueError("register_loss(\"" + name + "\"): the function is empty");
  for (const char* builtin : {"sparse_categorical_crossentropy", "categorical_crossentropy", "binary_crossentropy", "mse",
                              "mean_squared_error", "mae", "mean_absolute_error"})
    if (name == builtin) throw ValueError("register_loss: \"" + name + "\" is a built-in loss's name; choose another");
  auto loss = std::make_shared<FunctionLoss>(name, std::move(fn));
  registry().add(name, loss, where);
  return loss;
}

LossPtr registered_loss(const std::string& name) {
  const LossPtr* found = registry().find(name);
  return found ? *found : nullptr;
}

}  // namespace tandem::losses
