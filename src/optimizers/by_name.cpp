// Optimizers by their Keras string names, with default arguments.
#include "tandem/errors.h"
#include "tandem/optimizers.h"

namespace tandem::optimizers {

namespace {
struct ClassName {
  const char* name;  // Tandem's
  const char* cls;   // Keras's
};
constexpr ClassName kClasses[] = {{"sgd", "SGD"},         {"adam", "Adam"},   {"adamw", "AdamW"},   {"rmsprop", "RMSprop"},
                                  {"adagrad", "Adagrad"}, {"nadam", "Nadam"}, {"lion", "Lion"},     {"adamax", "Adamax"},
                                  {"loss_scale_optimizer", "LossScaleOptimizer"}};
}  // namespace

std::string keras_class_name(const std::string& name) {
  for (const ClassName& c : kClasses)
    if (name == c.name) return c.cls;
  return name;  // a custom class: saved under its own name, which load_model will not know
}

std::string keras_class_names() {
  std::string s;
  for (const ClassName& c : kClasses) s.append(s.empty() ? "" : ", ").append(c.cls);
  return s;
}

OptimizerPtr get(const std::string& name) {
  if (name == "sgd") return SGD();
  if (name == "adam") return Adam();
  if (name == "adamw") return AdamW();
  if (name == "rmsprop") return RMSprop();
  if (name == "adagrad") return Adagrad();
  if (name == "nadam") return Nadam();
  if (name == "lion") return Lion();
  if (name == "adamax") return Adamax();
  throw ValueError("compile: unknown optimizer '" + name + "'; expected one of sgd, adam, adamw, rmsprop, adagrad, nadam, lion, adamax");
}

}  // namespace tandem::optimizers
