// Keras's weight initializers, drawn from the model-wide seed.
#pragma once

#include <string>

#include "tandem/tensor.h"

namespace tandem {

// Fills a new tensor of `shape` by the named initializer ("glorot_uniform", "zeros", ...); the
// owner string names the layer in errors.
Tensor initialize(const std::string& initializer, const Shape& shape, DType dtype, const std::string& owner);
// The next independent seed from the global one (set_random_seed), for layers that need their own.
uint64_t next_seed();

}  // namespace tandem
