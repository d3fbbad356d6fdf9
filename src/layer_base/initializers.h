// Keras's weight initializers: filling a new weight, and the Initializer values' checks.
#pragma once

#include <string>

#include "config/keras_classes.h"
#include "tandem/initializers.h"
#include "tandem/tensor.h"

namespace tandem {

// Fills a new tensor of `shape` by the initializer; the owner string names the layer in errors
// (an unknown class, arguments Keras refuses, a shape the class cannot fill).
Tensor initialize(const Initializer& initializer, const Shape& shape, DType dtype, const std::string& owner);
// The next independent seed from the global one (set_random_seed), for layers that need their own.
uint64_t next_seed();

// The global random state: the seed and how many seeds next_seed() has drawn from it. Saving and
// restoring it makes later draws (initializers, dropout seeds, shuffles) repeat exactly.
struct RandomState {
  uint64_t seed = 0;
  uint64_t drawn = 0;
};
RandomState random_state();
void set_random_state(const RandomState& state);

}  // namespace tandem
