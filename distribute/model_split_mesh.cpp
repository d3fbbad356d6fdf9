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
    // The axes longer than 1: one (it splits the weights, and the batch if it is the batch
    // axis), or the batch axis and one more that splits the weights.
    std::vector<std::size_t> used;
    for (std::size_t a = 0; a < mesh_.shape.size(); ++a)
      if (mesh_.shape[a] > 1) used.push_back(a);
    if (used.size() > 2)
      throw ValueError("ModelSplit: a mesh of shape " + shape_list(mesh_.shape) + " has more than two axes longer than 1; use at most two");
    std::size_t batch = mesh_.shape.size(), model = mesh_.shape.size();
    for (std::size_t a : used) (mesh_.axis_names[a] == options_.batch_axis ? batch : model) = a;
    if (used.size() == 2 && (batch == mesh_.shape.size() || model == mesh_.shape.size()))
      throw ValueError("ModelSplit: a mesh with two axes longer than 1 (" + join(mesh_.axis_names) + ") needs one of them to be the batch axis '" +
                       options_.batch_axis + "'");
    if (used.size() == 1) model = used[0];
    rows_ = batch < mesh_.shape.size() && used.size() == 2 ? mesh_.shape[batch] : 1;
    if (model < mesh_.shape.size()) weight_axis_ = mesh_.axis_names[model];
    if (used.size() == 1 && mesh_.axis_names[model] == options_.batch_axis) split_rows_ = true;
    // Device (i, j) of rows × columns (batch index i, model index j) is program i·m + j.
    const int64_t m = static_cast<int64_t>(devices_.size()) / rows_;
    std::vector<std::string> ordered(devices_.size());
    for (std::size_t flat = 0; flat < devices_.size(); ++flat) {
      int64_t rest = static_cast<int64_t>(flat), i = 0, j = 0;
      for (std::size_t a = mesh_.shape.size(); a-- > 0;) {
        const int64_t coordinate = rest % mesh_.shape[a];
        rest /= mesh_.shape[a];
        if (a == batch && rows_ > 1) i = coordinate;
        if (a == model) j = coordinate;
      }
      ordered[static_cast<std::size_t>(i * m + j)] = devices_[flat];
    }
    devices_ = ordered;
    comm_ = comm::devices_communicator(devices_, std::chrono::milliseconds(options_.timeout_ms));
    span_workers("ModelSplit", devices_);  // in program order: (batch i, model j) is program i·m + j
  }

  std::vector<std::string> devices() const override { return local_devices_; }
  std::shared_ptr<comm::Communicator> communicator() const override { return comm_; }

  // One axis: the batch's or the weights'. Two: a (rows × m) mesh, the batch split over the
  // rows and the weights over each row's devices.
  compile::LoweringOptions describe(const graph::Graph& g, int micro_batches) const override {
    layouts_.warn_unmatched(g);
    const int m = static_cast<int>(static_cast<int64_t>(devices_.size()) / rows_);
    compile::LoweringOptions o;
    o.devices = devices_;
    std::vector<int> all(devices_.size());
    for (std::size_t d = 0; d < all.size(); ++d) all[d] = static_cast<int>(d);
    const std::vector<int> mesh = rows_ > 1 ? std::vector<int>{static_cast<int>(rows_), m} : std::vector<int>{m};
    o.place = [all, mesh](const graph::Node&) { return compile::Placement{all, mesh}; };
    if (rows_ > 1 || split_rows_)
      o.feed_layout = [](const graph::Node& feed, const std::vector<int>& mesh) {
        graph::MeshLayout l = graph::MeshLayout::replicated(mesh.size());
        l.axes[0] = distribute::split_rows(feed, mesh[0], "ModelSplit", "batch", "over the " + std::to_string(mesh[0]) + " devices of the batch axis");
        return l;
      };
    o.variable_layout = [this](const graph::VariableInfo& v, const std::vector<int>& mesh) {
        graph::MeshLayout l = graph::MeshLayout::replicated(mesh.size());
        l.axes.back() = layout_of(v, mesh.back());
        return l;
      };
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
      const graph::Layout l = layout_of(v, static_cast<int>(devices_.size() / static_cast<std::size_t>(rows_)));
      const std::size_t local = l.local(v.type, 0).bytes();
      whole += v.type.bytes();
      per_device += local;
      t.rows.push_back({v.path, v.type.shape.str(), l.is_split() ? layout_str(layouts_.of(v)) : "whole", std::to_string(local)});
    }
    t.notes.push_back("Each device holds " + std::to_string(per_device) + " of the " + std::to_string(whole) + " weight bytes (" +
                      percent(whole ? double(per_device) / double(whole) : 0) + "); optimizer slots are split with their weights");
    return t;
  }

 private:
  // A weight's layout over the `k` devices that split the weights.
  graph::Layout layout_of(const graph::VariableInfo& v, int k) const {
    if (rows_ > 1)
      for (const std::string& axis : layouts_.of(v))
        if (axis == options_.batch_axis)
          throw ValueError("ModelSplit: the layout " + layout_str(layouts_.of(v)) + " of weight '" + v.path +
                           "' splits it over the batch axis '" + axis + "'; with a batch axis and a model axis '" + weight_axis_ +
                           "' weights split over the model axis only");
    return weight_axis_.empty() ? graph::Layout::replicated() : layouts_.split_over(v, weight_axis_, k);
  }

  DeviceMesh mesh_;
  WeightLayouts layouts_;
  ShardingOptions options_;
  std::vector<std::string> devices_;
  int64_t rows_ = 1;          // devices along the batch axis when another axis splits the weights
  std::string weight_axis_;   // the mesh axis that splits the weights ("" if none)
  bool split_rows_ = false;   // one axis only, the batch axis: it splits the batch too
  std::shared_ptr<comm::Communicator> comm_;
};
}  // namespace

StrategyPtr ModelSplit(const DeviceMesh& mesh, const LayoutMap& layout_map, const ShardingOptions& options) {
  return std::make_shared<ShardingStrategy>(mesh, layout_map, options);
}

}  // namespace tandem::distribute
