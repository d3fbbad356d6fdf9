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

// What an op's layout rule sees: one node of the global graph, the layouts its inputs have on
// the node's devices, and how many devices those are.
struct LayoutQuery {
  const Graph& g;
  const Node& node;
  const std::vector<Layout>& in;
  int devices;
  const TensorType& input_type(int i) const { return g.type(node.inputs[static_cast<std::size_t>(i)]); }
  const TensorType& output_type(int o = 0) const { return node.outputs[static_cast<std::size_t>(o)]; }
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
