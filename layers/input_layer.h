// InputLayer: fixes a Sequential model's input shape.
#pragma once

#include "tandem/layer.h"

namespace tandem::layers {

// The sample shape if `layer` is an InputLayer, else null.
const Shape* input_layer_shape(const Layer& layer);

}  // namespace tandem::layers
