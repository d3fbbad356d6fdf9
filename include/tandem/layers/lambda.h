// Keras's Lambda layer for C++ functions: a function of symbols registered by name, so that a
// model using it saves the name and load_model finds the function again.
#pragma once

#include <functional>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "tandem/layer.h"

namespace tandem::layers {

// fn(inputs) computes the layer's output with tandem/ops.h; inputs are the symbols the layer was
// called on (one for lambda(x), several for lambda({a, b})). No weights.
using LambdaFn = std::function<Symbol(const std::vector<Symbol>& inputs)>;
// Registers fn under `name`, once per name (ValueError for an empty name, an empty function or a
// name registered before). Register before load_model reads a model that uses it.
void register_lambda(const std::string& name, LambdaFn fn, std::source_location where = std::source_location::current());

struct LambdaOptions {
  // Keras's output_shape (batch excluded): when given, the output must have this shape (ShapeError
  // otherwise). Saved in the config as Keras saves it.
  std::optional<Shape> output_shape{};
  std::string name{};
};
// A layer that calls the function registered as `function` (ValueError when none is). The config
// names the function as Keras names a registered function ({"class_name": "function", "config":
// name}); Keras cannot run a C++ function, so such a model loads only in Tandem. Loading a Keras
// Lambda whose function is Python bytecode (a Python lambda) is a ValueError that says so.
LayerRef Lambda(const std::string& function, const LambdaOptions& options = {});

}  // namespace tandem::layers
