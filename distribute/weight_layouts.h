// A LayoutMap (Keras's: regular expressions over weight paths, each with a TensorLayout) read
// once: what ModelSplit's mesh form and a Pipeline whose stages are model-split share — which
// weights a mesh axis splits, along which of their axes, and the errors and warning Keras gives.
#pragma once

#include <mutex>
#include <regex>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/layout.h"
#include "tandem/distribute.h"

namespace tandem::distribute {

class WeightLayouts {
 public:
  // `strategy` names the errors; a layout naming an axis not among `mesh_axes`, or an expression
  // that is not a regular expression, is a ValueError.
  WeightLayouts(std::string strategy, LayoutMap map, const std::vector<std::string>& mesh_axes);
  // The TensorLayout of a weight (an optimizer slot's: its weight's), or none (the optimizer's
  // counters and learning rate).
  TensorLayout of(const graph::VariableInfo& v) const;
  // The weight's layout over the `k` devices of mesh axis `axis`: split along the first of its
  // axes that its TensorLayout gives to `axis` (which `k` must divide), else replicated.
  graph::Layout split_over(const graph::VariableInfo& v, const std::string& axis, int k) const;
  // The weight's layout over a mesh of shape `mesh` whose axes are named `axes`: along each, as
  // split_over says.
  graph::MeshLayout over_mesh(const graph::VariableInfo& v, const std::vector<std::string>& axes, const std::vector<int>& mesh) const;
  // Keras warns when an expression matches no weight; so does this, once.
  void warn_unmatched(const graph::Graph& g) const;

 private:
  std::string strategy_;
  LayoutMap map_;
  std::vector<std::regex> patterns_;
  mutable std::once_flag warned_;
};

// ("model", None) as Keras prints a layout.
std::string layout_str(const TensorLayout& l);
// "a, b, c".
std::string join(const std::vector<std::string>& parts);

}  // namespace tandem::distribute
