// The losses users register with losses::register_loss.
#pragma once

#include <string>

#include "tandem/losses.h"

namespace tandem::losses {

LossPtr registered_loss(const std::string& name);  // null when no loss has that name

}  // namespace tandem::losses
