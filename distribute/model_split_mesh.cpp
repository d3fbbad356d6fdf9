// ModelSplit by sharding (Keras 3's ModelParallel over a DeviceMesh with a LayoutMap): every node
// on every device of the mesh; each weight, and each optimizer slot with it, split as its layout
// says; each batch split by rows over the mesh's batch axis. The ops' layout rules carry the
// splits through the activations and the lowering inserts the collectives where they must change
// (a column-split Dense then a row-split one: a partial sum, one all-reduce).
#include <algorithm>
#include <set>

#include "compile/lower.h"
#include "comm/local.h"
#include "distribute/stages.h"
#include "distribute/strategy.h"
#include "distribute/weight_layouts.h"
#include "tandem/errors.h"

namespace tandem::distribute {

namespace {
std::string shape_list(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t d : shape) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "{" + s + "}";
}

class ShardingStrategy : public Strategy {
 public:
  ShardingStrategy(DeviceMesh mesh, const LayoutMap& map, ShardingOptions o)
      : mesh_(std::move(mesh)), layouts_("ModelSplit", map, mesh_.axis_names), options_(std::move(o)) {
    devices_ = distinct_devices("ModelSplit", mesh_.devices);
    if (mesh_.shape.empty() || mesh_.shape.size() != mesh_.axis_names.size())
      throw ValueError("ModelSplit: the mesh of shape " + shape_list(mesh_.shape) + " needs one name per axis, got " +
                       std::to_string(mesh_.axis_names.size()) + " (" + join(mesh_.axis_names) + ")");
    int64_t size = 1;
    for (std::size_t a = 0; a < mesh_.shape.size(); ++a) {
      if (mesh_.shape[a] < 1) throw ValueError("ModelSplit: mesh axis '" + mesh_.axis_names[a] + "' has size " + std::to_string(mesh_.shape[a]));
      if (std::count(mesh_.axis_names.begin(), mesh_.axis_names.end(), mesh_.axis_names[a]) > 1)
        throw ValueError("ModelSplit: mesh axis name '" + mesh_.axis_names[a] + "' is used twice");
      size *= mesh_.shape[a];
    }
    if (size != static_cast<int64_t>(devices_.size()))
      throw ValueError("ModelSplit: a mesh of shape " + shape_list(mesh_.shape) + " needs " + std::to_string(size) + " devices, got " +
                       std::to_string(devices_.size()));
    for (std::size_t a = 0; a < mesh_.shape.size(); ++a) {
      shape_.push_back(static_cast<int>(mesh_.shape[a]));
      if (mesh_.axis_names[a] == options_.batch_axis) batch_ = static_cast<int>(a);
    }
    comm_ = comm::devices_communicator(devices_, std::chrono::milliseconds(options_.timeout_ms));
    span_workers("ModelSplit", devices_);  // program p is the mesh's device p, in row-major order
  }

  std::vector<std::string> devices() const override { return local_devices_; }
  std::shared_ptr<comm::Communicator> communicator() const override { return comm_; }

  // Every node on the whole mesh; each batch split by rows over the batch axis, each weight over
  // the axes its layout names (graph::MeshLayout: one entry per mesh axis).
  compile::LoweringOptions describe(const graph::Graph& g, int micro_batches) const override {
    layouts_.warn_unmatched(g);
    compile::LoweringOptions o;
    o.devices = devices_;
    std::vector<int> all(devices_.size());
    for (std::size_t d = 0; d < all.size(); ++d) all[d] = static_cast<int>(d);
    o.place = [all, shape = shape_](const graph::Node&) { return compile::Placement{all, shape}; };
    if (batch_ >= 0)
      o.feed_layout = [b = static_cast<std::size_t>(batch_)](const graph::Node& feed, const std::vector<int>& mesh) {
        graph::MeshLayout l = graph::MeshLayout::replicated(mesh.size());
        l.axes[b] = distribute::split_rows(feed, mesh[b], "ModelSplit", "batch", "over the " + std::to_string(mesh[b]) + " devices of the batch axis");
        return l;
      };
    o.variable_layout = [this](const graph::VariableInfo& v, const std::vector<int>& mesh) { return layouts_.over_mesh(v, mesh_.axis_names, mesh); };
    o.micro_batches = micro_batches;
    keep_this_workers(o);
    return o;
  }

  PlacementTable placement(const graph::Graph& g) const override {
    PlacementTable t{"ModelSplit: mesh " + shape_list(mesh_.shape) + " (" + join(mesh_.axis_names) + ") over " + join(devices_),
                     {"Weight", "Shape", "Layout", "Bytes per device"},
                     {false, false, false, true},
                     {},
                     {}};
    std::size_t whole = 0, per_device = 0;
    for (const graph::VariableInfo& v : g.variables()) {
      const graph::MeshLayout l = layouts_.over_mesh(v, mesh_.axis_names, shape_);
      const std::size_t local = l.local(v.type, std::vector<int>(shape_.size(), 0)).bytes();
      whole += v.type.bytes();
      per_device += local;
      t.rows.push_back({v.path, v.type.shape.str(), l.is_replicated() ? "whole" : layout_str(layouts_.of(v)), std::to_string(local)});
    }
    t.notes.push_back("Each device holds " + std::to_string(per_device) + " of the " + std::to_string(whole) + " weight bytes (" +
                      percent(whole ? double(per_device) / double(whole) : 0) + "); optimizer slots are split with their weights");
    return t;
  }

 private:
  DeviceMesh mesh_;
  WeightLayouts layouts_;
  ShardingOptions options_;
  std::vector<std::string> devices_;  // in the mesh's row-major order
  std::vector<int> shape_;            // the mesh's
  int batch_ = -1;                    // the mesh axis that splits the batch; -1: none
  std::shared_ptr<comm::Communicator> comm_;
};
}  // namespace

StrategyPtr ModelSplit(const DeviceMesh& mesh, const LayoutMap& layout_map, const ShardingOptions& options) {
  return std::make_shared<ShardingStrategy>(mesh, layout_map, options);
}

}  // namespace tandem::distribute
