// A strategy's description lowered, as the model lowers a step: the tests' way to read the plan
// a strategy makes (the strategy itself never calls the lowering).
#pragma once

#include <vector>

#include "compile/lower.h"
#include "distribute/strategy.h"

inline tandem::compile::Plan lower_with(const tandem::distribute::StrategyPtr& strategy, const tandem::graph::Graph& g,
                                        const std::vector<tandem::graph::Value>& fetches, int micro_batches = 1) {
  return tandem::compile::lower(g, fetches, strategy->describe(g, micro_batches));
}
