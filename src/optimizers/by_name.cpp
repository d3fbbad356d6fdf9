// Optimizers by their Keras string names, with default arguments.
#include "tandem/errors.h"
#include "tandem/optimizers.h"

namespace tandem::optimizers {

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
