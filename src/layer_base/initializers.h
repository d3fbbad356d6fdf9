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

// The global random state: the seed and how many seeds next_seed() has drawn from it. Saving and
// restoring it makes later draws (initializers, dropout seeds, shuffles) repeat exactly.
struct RandomState {
  uint64_t seed = 0;
  uint64_t drawn = 0;
};
RandomState random_state();
void set_random_state(const RandomState& state);

}  // namespace tandem
