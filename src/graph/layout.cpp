#include "graph/layout.h"

#include <algorithm>

#include "tandem/errors.h"

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

MeshLayout MeshLayout::even_splits(const Shape& shape, const std::vector<int>& dims, const std::vector<int>& mesh) {
  std::vector<int64_t> extent = shape.dims();
  MeshLayout l = replicated(mesh.size());
  for (std::size_t a = 0; a < mesh.size() && a < dims.size(); ++a) {
    if (dims[a] < 0 || mesh[a] == 1) continue;
    const auto d = static_cast<std::size_t>(dims[a]);
    l.axes[a] = Layout::even_split(dims[a], extent[d], mesh[a]);
    extent[d] = l.axes[a].shares[0];
  }
  return l;
}

bool MeshLayout::is_replicated() const {
  return std::all_of(axes.begin(), axes.end(), [](const Layout& l) { return l.is_replicated(); });
}

std::vector<std::pair<int64_t, int64_t>> MeshLayout::block(const TensorType& global, const std::vector<int>& coords) const {
  std::vector<std::pair<int64_t, int64_t>> b;
  std::vector<int> cut_by(static_cast<std::size_t>(global.shape.rank()), -1);  // the last axis that cut each dimension
  for (int64_t e : global.shape.dims()) b.push_back({0, e});
  for (std::size_t a = 0; a < axes.size(); ++a) {
    const Layout& l = axes[a];
    if (!l.is_split()) continue;
    auto& [offset, extent] = b[static_cast<std::size_t>(l.axis)];
    int64_t total = 0;
    for (int64_t s : l.shares) total += s;
    if (total != extent && cut_by[static_cast<std::size_t>(l.axis)] < 0)
      throw Error("internal: the shares " + l.str() + " of mesh axis " + std::to_string(a) + " do not add up to dimension " +
                  std::to_string(l.axis) + " of shape " + global.shape.str());
    if (total != extent)
      throw Error("a value of shape " + global.shape.str() + " is cut along dimension " + std::to_string(l.axis) + " by mesh axis " +
                  std::to_string(cut_by[static_cast<std::size_t>(l.axis)]) + " into unequal blocks and again by mesh axis " +
                  std::to_string(a) + ", whose shares " + l.str() + " fit a block of " + std::to_string(total) + ", not this one of " +
                  std::to_string(extent) + "; make that dimension a multiple of the outer axis's devices");
    offset += l.offset(coords[a]);
    extent = l.shares[static_cast<std::size_t>(coords[a])];
    cut_by[static_cast<std::size_t>(l.axis)] = static_cast<int>(a);
  }
  return b;
}

TensorType MeshLayout::local(const TensorType& global, const std::vector<int>& coords) const {
  if (axes.size() == 1) return axes[0].local(global, coords[0]);
  std::vector<int64_t> dims;
  for (const auto& [offset, extent] : block(global, coords)) dims.push_back(extent);
  return {Shape(std::move(dims)), global.dtype};
}

std::string MeshLayout::str() const {
  if (axes.size() == 1) return axes[0].str();
  std::string s = "[";
  for (std::size_t a = 0; a < axes.size(); ++a) {
    if (a) s += ", ";
    s += axes[a].str();
  }
  return s + "]";
}

std::vector<int> mesh_coordinates(int position, const std::vector<int>& mesh) {
  std::vector<int> c(mesh.size());
  for (std::size_t a = mesh.size(); a-- > 0;) {
    c[a] = position % mesh[a];
    position /= mesh[a];
  }
  return c;
}

}  // namespace tandem::graph
