// The learning rate Keras's `optimizer.learning_rate` reads between steps: the rate set, or a
// schedule's rate for the next update (as float32, the dtype Keras computes it in).
#pragma once

#include "tandem/optimizers.h"

namespace tandem::callbacks::detail {

inline double current_learning_rate(const Optimizer& optimizer) {
  const SchedulePtr& schedule = optimizer.schedule();
  return schedule ? static_cast<double>(static_cast<float>((*schedule)(optimizer.iterations()))) : optimizer.learning_rate();
}

}  // namespace tandem::callbacks::detail
