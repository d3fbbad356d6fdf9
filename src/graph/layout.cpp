#include "graph/layout.h"

#include <algorithm>

namespace tandem::graph {

Layout Layout::even_split(int axis, int64_t extent, int devices) {
  std::vector<int64_t> shares;
  for (int d = 0; d < devices; ++d) shares.push_back(extent / devices + (d < extent % devices ? 1 : 0));
  return split(axis, std::move(shares));
}

bool Layout::even() const {
  return is_split() && std::all_of(shares.begin(), shares.end(), [&](int64_t s) { return s == shares.front(); });
}

int64_t Layout::offset(int position) const {
  int64_t o = 0;
  for (int d = 0; d < position; ++d) o += shares[static_cast<std::size_t>(d)];
  return o;
}

TensorType Layout::local(const TensorType& global, int position) const {
  if (!is_split()) return global;
  std::vector<int64_t> dims = global.shape.dims();
  dims[static_cast<std::size_t>(axis)] = shares[static_cast<std::size_t>(position)];
  return {Shape(std::move(dims)), global.dtype};
}

std::string Layout::str() const {
  if (is_replicated()) return "R";
  if (is_partial()) return "P";
  std::string s = "S(" + std::to_string(axis) + ")[";
  for (std::size_t i = 0; i < shares.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shares[i]);
  }
  s += ']';
  return s;
}

}  // namespace tandem::graph
