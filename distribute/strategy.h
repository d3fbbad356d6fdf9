// A strategy rewrites a graph into per-device programs and a schedule; it owns no kernels.
#pragma once

#include <string>
#include <vector>

#include "compile/plan.h"
#include "tandem/distribute.h"

namespace tandem::distribute {

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::vector<std::string> devices() const = 0;
  // Lowers a whole-batch graph (inputs, loss, backward, updates) into a Plan. `fetches` are the
  // values the caller reads after a step.
  virtual compile::Plan lower(const graph::Graph& g, const std::vector<graph::Value>& fetches) const = 0;
};

}  // namespace tandem::distribute
