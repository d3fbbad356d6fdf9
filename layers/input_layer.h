// InputLayer: fixes a Sequential model's input shape.
#pragma once

#include "layers/config.h"
#include "tandem/layer.h"

namespace tandem::layers {

// The sample shape if `layer` is an InputLayer, else null.
const Shape* input_layer_shape(const Layer& layer);

// An InputLayer's config keys as Keras 3 writes them: batch_shape [null, d1, ...], dtype, sparse.
Json input_layer_config(const Shape& shape, DType dtype);
// The sample shape (batch excluded) and dtype from such a config; batch_input_shape (Keras 2) works too.
Shape input_layer_shape(const ConfigReader& config);
DType input_layer_dtype(const ConfigReader& config);

}  // namespace tandem::layers
