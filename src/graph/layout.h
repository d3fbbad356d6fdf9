// How a value of the global graph lies over the devices that hold it (OneFlow's SBP): every
// device has all of it (replicated), a block of it along one axis (split), or a tensor of its
// full shape whose sum over the devices is the value (partial). Ops state, per node, which
// input layouts they can work on and what layouts their outputs then have; the lowering pass
// inserts the communication that turns one layout into another where they differ.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tandem::graph {

struct Layout {
  enum class Kind : uint8_t { Replicated, Split, Partial };
  Kind kind = Kind::Replicated;
  int axis = 0;                 // Split: the axis cut into blocks
  std::vector<int64_t> shares;  // Split: each device's extent along the axis, in placement order

  static Layout replicated() { return {}; }
  static Layout partial() { return {Kind::Partial, 0, {}}; }
  static Layout split(int axis, std::vector<int64_t> shares) { return {Kind::Split, axis, std::move(shares)}; }
  // `extent` cut into `devices` blocks as evenly as possible, the first ones one longer.
  static Layout even_split(int axis, int64_t extent, int devices);

  bool is_split() const { return kind == Kind::Split; }
  bool is_partial() const { return kind == Kind::Partial; }
  bool is_replicated() const { return kind == Kind::Replicated; }
  bool even() const;                        // a split whose shares are all equal
  int64_t offset(int position) const;       // a split's start on the device at `position`
  TensorType local(const TensorType& global, int position) const;  // the device's own part
  std::string str() const;                  // "R", "P", "S(0)[3,2]"
  bool operator==(const Layout&) const = default;
};

// A value's layout over a mesh of devices (OneFlow's n-D SBP; JAX's PartitionSpec over a named
// mesh): one Layout per mesh axis, axis 0 outermost, the devices in row-major order. Entry a says
// how the block that the axes before it leave on a device lies over the devices along axis a: its
// split's shares divide that block. A one-axis mesh's layout is its one Layout.
struct MeshLayout {
  std::vector<Layout> axes;

  MeshLayout() = default;
  MeshLayout(Layout one) : axes{std::move(one)} {}  // NOLINT: a one-axis mesh
  explicit MeshLayout(std::vector<Layout> per_axis) : axes(std::move(per_axis)) {}
  static MeshLayout replicated(std::size_t axes) { return MeshLayout(std::vector<Layout>(axes)); }
  // Dimension `dims[a]` of `shape` cut evenly over axis a of `mesh` (-1: not cut there); a
  // dimension cut by several axes is cut by the outer one first, then each block again.
  static MeshLayout even_splits(const Shape& shape, const std::vector<int>& dims, const std::vector<int>& mesh);

  bool is_replicated() const;
  const Layout& operator[](std::size_t a) const { return axes[a]; }
  // The block of a value of type `global` on the device at mesh coordinates `coords`: its offset
  // and extent along each of the value's dimensions. A dimension cut unevenly by one axis and
  // again by a later one (whose shares then differ per block) is an Error naming both.
  std::vector<std::pair<int64_t, int64_t>> block(const TensorType& global, const std::vector<int>& coords) const;
  TensorType local(const TensorType& global, const std::vector<int>& coords) const;
  std::string str() const;  // a one-axis mesh's as Layout::str, else "[S(0)[2,2], R]"
  bool operator==(const MeshLayout&) const = default;
};

// The coordinates of the device at row-major `position` of a mesh of shape `mesh`.
std::vector<int> mesh_coordinates(int position, const std::vector<int>& mesh);

// What an op's layout rule sees: one node of the global graph, the layouts its inputs have on
// the node's devices, and how many devices those are. On a mesh the rule answers for each axis
// in turn, seeing that axis's entries and the blocks the axes before it leave.
struct LayoutQuery {
  const Graph& g;
  const Node& node;
  const std::vector<Layout>& in;
  int devices;
  // On a later axis of a mesh, the types of the blocks the earlier axes leave; null: the node's.
  const std::vector<TensorType>* in_types = nullptr;
  const std::vector<TensorType>* out_types = nullptr;
  const TensorType& input_type(int i) const {
    return in_types ? (*in_types)[static_cast<std::size_t>(i)] : g.type(node.inputs[static_cast<std::size_t>(i)]);
  }
  const TensorType& output_type(int o = 0) const {
    return out_types ? (*out_types)[static_cast<std::size_t>(o)] : node.outputs[static_cast<std::size_t>(o)];
  }
};

// A rule's answer: the layout each input must have (the pass converts those that differ) and
// the layout each output then has.
struct Signature {
  std::vector<Layout> in, out;
};

// No answer: the op works only on replicated inputs (always correct, maybe slow).
using LayoutFn = std::function<std::optional<Signature>(const LayoutQuery&)>;

// Rewrites a node's attributes for one device's part (a shape attribute's batch extent, a
// dropout mask's first row); `position` is the device's index in the node's placement.
using LocalizeFn = std::function<void(Attrs& attrs, const Signature& sig, int position)>;

}  // namespace tandem::graph
