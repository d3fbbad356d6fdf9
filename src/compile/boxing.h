// Boxing: the communication that turns a value's layout on a mesh of devices into another layout
// on the same or another mesh, added as nodes to the per-device graphs. Along one mesh axis,
// within each of its sub-groups: partial → replicated is an all-reduce, split → replicated an
// all-gather, partial → split a reduce-scatter, replicated → split a local slice, split → another
// split an all-gather and a slice; one device → another is a send/recv pair. A change on several
// axes goes axis by axis (partial sums over several axes in one all-reduce over their devices),
// the inner axes first where an outer axis's change would move the blocks they cut.
#pragma once

#include <optional>
#include <vector>

#include "graph/graph.h"
#include "graph/layout.h"

namespace tandem::compile {

// A value of the global graph as the devices hold it.
struct Located {
  std::vector<int> devices;       // ascending device indices, row-major over `mesh`
  std::vector<int> mesh;          // the axes' lengths
  graph::MeshLayout layout;
  std::vector<graph::Value> part; // per device index (invalid where the device has none)
  TensorType type;                // the global value's type
  graph::Phase phase = graph::Phase::Forward;
  int stage = 0;  // the pipeline chunk whose blocks hold the nodes that work on it
  graph::Value on(int device) const { return part[static_cast<std::size_t>(device)]; }
};

// How a gradient laid out as `have` becomes `want` by a sum alone (every other axis as wanted):
// along `axes`, partial there and wanted whole (an all-reduce), or along one axis into an even
// split of its first dimension, which no other axis cuts (a reduce-scatter, as ZeRO keeps a
// weight's gradient); none: not by a sum alone.
struct Reduction {
  std::vector<int> axes;
  bool scatter = false;
  auto operator<=>(const Reduction&) const = default;
};
std::optional<Reduction> reduction(const graph::MeshLayout& have, const graph::MeshLayout& want);

class Boxing {
 public:
  Boxing(std::vector<graph::Graph>& local, bool all_reduce_bf16) : local_(local), bf16_(all_reduce_bf16) {}
  // `v` as `want` on the mesh `mesh` of `devices`, for a reader in pipeline chunk `stage` (where
  // a transfer lands).
  Located convert(const Located& v, const std::vector<int>& devices, const std::vector<int>& mesh, const graph::MeshLayout& want, int stage);
  // Sums values partial along mesh axes `axes` (the others equal) of one mesh in one all-reduce
  // within each sub-group of those axes: a bucket.
  std::vector<Located> all_reduce(const std::vector<Located>& parts, const std::vector<int>& axes);
  // Sums values partial along mesh axis `axis` into the blocks `want` gives each (an even split
  // of the first dimension along that axis, the other axes as they are) in one reduce-scatter
  // within each sub-group of the axis: each value's rows are laid out per device, side by side.
  std::vector<Located> reduce_scatter(const std::vector<Located>& parts, int axis, const std::vector<graph::MeshLayout>& want);
  // A copy of `v` in a buffer of its own (an all-reduce works in place).
  Located copy(const Located& v);

 private:
  Located within(const Located& v, const graph::MeshLayout& want);  // same mesh, another layout
  Located along(const Located& v, int axis, const graph::Layout& want);  // one axis's entry changed
  // A one-axis view of `v`: the devices of a sub-group of mesh axes `axes` (the others fixed at
  // those of the device at `position`), each holding its block as the other axes leave it.
  Located group(const Located& v, const std::vector<int>& axes, int position) const;
  std::vector<Located> all_reduce(const std::vector<Located>& parts);  // one axis, one group
  Located within(const Located& v, const graph::Layout& want);  // one axis
  Located transfer(const Located& v, const std::vector<int>& devices, int stage);  // replicated → other devices
  Located pairwise(const Located& v, const std::vector<int>& devices, int stage);  // each part to its counterpart on a mesh of one shape
  Located slice(const Located& v, const graph::Layout& want);            // replicated → split
  Located gather(const Located& v);                                      // even split → replicated
  Located scatter(const Located& v, const graph::Layout& want);          // partial → even split
  // A point-to-point transfer from one device to another, each its own tag: programs may reach
  // their transfers in other orders. Returns the value on `to`.
  graph::Value send(const Located& v, int from, int to, const TensorType& part, int stage);

  std::vector<graph::Graph>& local_;
  bool bf16_;
  int next_bucket_ = 0;
  int next_tag_ = 0;
};

}  // namespace tandem::compile
