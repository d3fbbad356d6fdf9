// Checks of the initializer, regularizer and constraint values (Keras's classes and the arguments
// their constructors accept), shared by the layers that use them and the configs that hold them.
#pragma once

#include <string>

#include "tandem/initializers.h"
#include "tandem/regularizers.h"

namespace tandem {

// Each throws ValueError naming `owner` for an unknown class or an argument Keras refuses; an
// empty regularizer or constraint (none) passes.
void check_initializer(const Initializer& initializer, const std::string& owner);
void check_regularizer(const Regularizer& r, const std::string& owner);
void check_constraint(const Constraint& c, const std::string& owner);
// Keras's snake_case name of the initializer's class ("GlorotUniform" -> "glorot_uniform").
std::string initializer_name(const Initializer& initializer);

}  // namespace tandem
