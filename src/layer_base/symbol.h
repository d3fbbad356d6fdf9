// The recorded functional graph: which layer produced a symbol from which inputs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tandem/layer.h"

namespace tandem {

struct Symbol::Node {
  std::shared_ptr<Layer> layer;  // null for a model input
  std::vector<Symbol> inputs;
  Shape shape;                   // batch dimension -1
  DType dtype = DType::F32;
  std::string input_name;        // for model inputs
};

// Unique name "dense", "dense_1", ... per prefix, like Keras's auto-naming.
std::string unique_layer_name(const std::string& prefix);

}  // namespace tandem
