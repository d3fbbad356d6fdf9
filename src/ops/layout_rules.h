// The few kinds of layout rule that ops share (graph/layout.h says what a rule is). Most ops
// treat the rows of their batch inputs independently: split those on axis 0 and the op runs on
// each device's rows. Sums over the batch (weight gradients) turn such splits into partial sums.
// Ops that are linear pass partial sums through.
#pragma once

#include <vector>

#include "graph/layout.h"

namespace tandem::ops {

using graph::Layout;
using graph::LayoutFn;
using graph::LocalizeFn;
using graph::Signature;

// Sets of inputs in which the op is linear jointly: with exactly one set's inputs partial and the
// others replicated, the outputs are partial (add: {{0, 1}}; mul: {{0}, {1}}; scale: {{0}}).
using LinearIn = std::vector<std::vector<int>>;

struct RowsRule {
  std::vector<int> batch_inputs;       // inputs whose axis 0 is the batch (absent optional ones are skipped)
  std::vector<int> partial_outputs;    // outputs that sum over the batch (weight gradients)
  LinearIn linear;
  const char* axis_attr = nullptr;     // the op works along this axis: not along the batch
  int min_rank = 1;                    // batch inputs of lower rank have no batch axis
  // > 0: the op works within the last `leading` axes (and its axis_attr), so a split of any axis
  // before them (attention's heads) passes through as rows do.
  int leading = 0;
};
LayoutFn rows(RowsRule rule);

// NumPy broadcasting: an input of the output's rank whose axis 0 has the output's extent (> 1)
// is a batch input; the others (biases, scalars, broadcast rows) are replicated.
LayoutFn elementwise(LinearIn linear = {});

// Partial inputs give partial outputs (reshape, transpose, broadcast): for ops with one input.
LinearIn linear_in_input0();

// Sets attribute `key` (a shape, batch first) to output 0's extent on the device.
LocalizeFn local_batch_extent(const char* key);

// The signature of `linear` if the inputs are partial as one of its sets wants.
std::optional<Signature> partial_signature(const graph::LayoutQuery& q, const LinearIn& linear);

}  // namespace tandem::ops
