#include "distribute/weight_layouts.h"

#include <algorithm>
#include <iostream>

#include "tandem/errors.h"

namespace tandem::distribute {

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

std::string layout_str(const TensorLayout& l) {
  std::string s = "(";
  for (std::size_t i = 0; i < l.size(); ++i) {
    if (i) s += ", ";
    s += l[i].empty() ? "None" : "\"" + l[i] + "\"";
  }
  return s + (l.size() == 1 ? ",)" : ")");
}

WeightLayouts::WeightLayouts(std::string strategy, LayoutMap map, const std::vector<std::string>& mesh_axes)
    : strategy_(std::move(strategy)), map_(std::move(map)) {
  for (const auto& [pattern, layout] : map_) {
    try {
      patterns_.emplace_back(pattern);
    } catch (const std::regex_error& e) {
      throw ValueError(strategy_ + ": layout_map expression '" + pattern + "' is not a regular expression: " + e.what());
    }
    for (const std::string& axis : layout)
      if (!axis.empty() && std::find(mesh_axes.begin(), mesh_axes.end(), axis) == mesh_axes.end())
        throw ValueError(strategy_ + ": layout_map['" + pattern + "'] = " + layout_str(layout) + " names mesh axis '" + axis +
                         "'; the mesh's axes are " + join(mesh_axes));
  }
}

TensorLayout WeightLayouts::of(const graph::VariableInfo& v) const {
  if (v.role == graph::Role::Optimizer && v.slot_of.empty()) return {};
  const std::string& weight = v.slot_of.empty() ? v.path : v.slot_of;
  const Shape& shape = v.type.shape;
  for (std::size_t i = 0; i < patterns_.size(); ++i)
    if (std::regex_search(weight, patterns_[i])) {
      const TensorLayout& l = map_[i].second;
      if (static_cast<int>(l.size()) != shape.rank())
        throw ValueError(strategy_ + ": layout_map['" + map_[i].first + "'] = " + layout_str(l) + " gives " + std::to_string(l.size()) +
                         " axes to weight '" + weight + "' of shape " + shape.str() + "; it needs " + std::to_string(shape.rank()));
      return l;
    }
  return {};
}

graph::Layout WeightLayouts::split_over(const graph::VariableInfo& v, const std::string& axis, int k) const {
  const TensorLayout l = of(v);
  for (std::size_t a = 0; a < l.size(); ++a) {
    if (l[a] != axis) continue;
    const int64_t extent = v.type.shape[static_cast<int>(a)];
    if (extent % k != 0)
      throw ValueError(strategy_ + ": the layout " + layout_str(l) + " of weight '" + v.path + "' (shape " + v.type.shape.str() + ") splits axis " +
                       std::to_string(a) + " of " + std::to_string(extent) + " over the " + std::to_string(k) + " devices of mesh axis '" + axis +
                       "', which does not divide it");
    return graph::Layout::even_split(static_cast<int>(a), extent, k);
  }
  return graph::Layout::replicated();
}

graph::MeshLayout WeightLayouts::over_mesh(const graph::VariableInfo& v, const std::vector<std::string>& axes, const std::vector<int>& mesh) const {
  graph::MeshLayout l = graph::MeshLayout::replicated(mesh.size());
  for (std::size_t a = 0; a < mesh.size(); ++a)
    if (mesh[a] > 1) l.axes[a] = split_over(v, axes[a], mesh[a]);
  return l;
}

void WeightLayouts::warn_unmatched(const graph::Graph& g) const {
  std::call_once(warned_, [&] {
    std::vector<std::string> paths;
    for (const graph::VariableInfo& v : g.variables())
      if (v.role != graph::Role::Optimizer) paths.push_back(v.path);
    for (std::size_t i = 0; i < patterns_.size(); ++i)
      if (std::none_of(paths.begin(), paths.end(), [&](const std::string& p) { return std::regex_search(p, patterns_[i]); }))
        std::cerr << strategy_ << ": warning: layout_map['" << map_[i].first << "'] matches no weight; the weights are " << join(paths) << "\n";
  });
}

}  // namespace tandem::distribute
