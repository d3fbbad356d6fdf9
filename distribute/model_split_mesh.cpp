// ModelSplit by sharding (Keras 3's ModelParallel over a DeviceMesh with a LayoutMap): every node
// on every device of the mesh; each weight, and each optimizer slot with it, split as its layout
// says; each batch split by rows over the mesh's batch axis. The ops' layout rules carry the
// splits through the activations and the lowering inserts the collectives where they must change
// (a column-split Dense then a row-split one: a partial sum, one all-reduce).
#include <algorithm>
#include <iostream>
#include <mutex>
#include <regex>
#include <set>

#include "compile/lower.h"
#include "distribute/comm/inprocess.h"
#include "distribute/stages.h"
#include "distribute/strategy.h"
#include "tandem/errors.h"

namespace tandem::distribute {

namespace {
std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

std::string str(const TensorLayout& l) {
  std::string s = "(";
  for (std::size_t i = 0; i < l.size(); ++i) {
    if (i) s += ", ";
    s += l[i].empty() ? "None" : "\"" + l[i] + "\"";
  }
  return s + (l.size() == 1 ? ",)" : ")");
}

std::string shape_list(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t d : shape) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "{" + s + "}";
}

class ShardingStrategy : public Strategy {
 public:
  ShardingStrategy(DeviceMesh mesh, LayoutMap map, ShardingOptions o) : mesh_(std::move(mesh)), map_(std::move(map)), options_(std::move(o)) {
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
      if (mesh_.shape[a] == 1) continue;
      if (!split_axis_.empty())
        throw ValueError("ModelSplit: a mesh with more than one axis longer than 1 (shape " + shape_list(mesh_.shape) +
                         ") is not supported yet; split over one axis");
      split_axis_ = mesh_.axis_names[a];
    }
    for (const auto& [pattern, layout] : map_) {
      try {
        patterns_.emplace_back(pattern);
      } catch (const std::regex_error& e) {
        throw ValueError("ModelSplit: layout_map expression '" + pattern + "' is not a regular expression: " + e.what());
      }
      for (const std::string& axis : layout)
        if (!axis.empty() && std::find(mesh_.axis_names.begin(), mesh_.axis_names.end(), axis) == mesh_.axis_names.end())
          throw ValueError("ModelSplit: layout_map['" + pattern + "'] = " + str(layout) + " names mesh axis '" + axis +
                           "'; the mesh's axes are " + join(mesh_.axis_names));
    }
    comm_ = std::make_shared<comm::InProcessCommunicator>(devices_);
    comm_->set_timeout(std::chrono::milliseconds(options_.timeout_ms));
  }

  std::vector<std::string> devices() const override { return devices_; }
  std::shared_ptr<comm::Communicator> communicator() const override { return comm_; }

  compile::Plan lower(const graph::Graph& g, const std::vector<graph::Value>& fetches, int micro_batches) const override {
    warn_unmatched(g);
    std::vector<int> all(devices_.size());
    for (std::size_t d = 0; d < all.size(); ++d) all[d] = static_cast<int>(d);
    compile::LoweringOptions o;
    o.devices = devices_;
    o.place = [all](const graph::Node&) { return all; };
    if (split_axis_ == options_.batch_axis)
      o.feed_layout = [](const graph::Node& feed, int k) {
        const int64_t rows = feed.outputs[0].shape.rank() ? feed.outputs[0].shape[0] : 0;
        if (rows < k)
          throw ValueError("ModelSplit: a batch of " + std::to_string(rows) + " rows cannot be split over the " + std::to_string(k) +
                           " devices of the batch axis; use batches of at least " + std::to_string(k) + " rows");
        return graph::Layout::even_split(0, rows, k);
      };
    o.variable_layout = [this](const graph::VariableInfo& v, int) { return layout_of(v); };
    o.micro_batches = micro_batches;
    return compile::lower(g, fetches, o);
  }

  PlacementTable placement(const graph::Graph& g) const override {
    PlacementTable t{"ModelSplit: mesh " + shape_list(mesh_.shape) + " (" + join(mesh_.axis_names) + ") over " + join(devices_),
                     {"Weight", "Shape", "Layout", "Bytes per device"},
                     {false, false, false, true},
                     {},
                     {}};
    std::size_t whole = 0, per_device = 0;
    for (const graph::VariableInfo& v : g.variables()) {
      const graph::Layout l = layout_of(v);
      const std::size_t local = l.local(v.type, 0).bytes();
      whole += v.type.bytes();
      per_device += local;
      t.rows.push_back({v.path, v.type.shape.str(), l.is_split() ? str(tensor_layout(v.path, v.type.shape)) : "whole", std::to_string(local)});
    }
    t.notes.push_back("Each device holds " + std::to_string(per_device) + " of the " + std::to_string(whole) + " weight bytes (" +
                      percent(whole ? double(per_device) / double(whole) : 0) + "); optimizer slots are split with their weights");
    return t;
  }

 private:
  // The TensorLayout of a weight path (a slot's: its weight's), or none.
  TensorLayout tensor_layout(const std::string& path, const Shape& shape) const {
    std::string owner = path;
    if (owner.starts_with("optimizer/") && owner.find('/', 10) != std::string::npos)
      owner = owner.substr(10, owner.rfind('/') - 10);  // "optimizer/<weight path>/<slot>"
    for (std::size_t i = 0; i < patterns_.size(); ++i)
      if (std::regex_search(owner, patterns_[i])) {
        const TensorLayout& l = map_[i].second;
        if (static_cast<int>(l.size()) != shape.rank()) {
          if (owner != path) return {};  // iterations, learning rate: not a slot of this weight
          throw ValueError("ModelSplit: layout_map['" + map_[i].first + "'] = " + str(l) + " gives " + std::to_string(l.size()) +
                           " axes to weight '" + path + "' of shape " + shape.str() + "; it needs " + std::to_string(shape.rank()));
        }
        return l;
      }
    return {};
  }

  graph::Layout layout_of(const graph::VariableInfo& v) const {
    const TensorLayout l = tensor_layout(v.path, v.type.shape);
    const int k = static_cast<int>(devices_.size());
    for (std::size_t a = 0; a < l.size(); ++a) {
      if (l[a].empty() || l[a] != split_axis_) continue;  // whole, or over an axis of one device
      const int64_t extent = v.type.shape[static_cast<int>(a)];
      if (extent % k != 0)
        throw ValueError("ModelSplit: the layout " + str(l) + " of weight '" + v.path + "' (shape " + v.type.shape.str() + ") splits axis " +
                         std::to_string(a) + " of " + std::to_string(extent) + " over the " + std::to_string(k) + " devices of mesh axis '" +
                         l[a] + "', which does not divide it");
      return graph::Layout::even_split(static_cast<int>(a), extent, k);
    }
    return graph::Layout::replicated();
  }

  // Keras warns when a layout_map entry matches no weight; so does this, once per strategy.
  void warn_unmatched(const graph::Graph& g) const {
    std::lock_guard<std::mutex> lock(warned_mutex_);
    if (warned_) return;
    warned_ = true;
    std::vector<std::string> paths;
    for (const graph::VariableInfo& v : g.variables())
      if (!v.path.starts_with("optimizer/")) paths.push_back(v.path);
    for (std::size_t i = 0; i < patterns_.size(); ++i)
      if (std::none_of(paths.begin(), paths.end(), [&](const std::string& p) { return std::regex_search(p, patterns_[i]); }))
        std::cerr << "ModelSplit: warning: layout_map['" << map_[i].first << "'] matches no weight; the weights are " << join(paths) << "\n";
  }

  DeviceMesh mesh_;
  LayoutMap map_;
  ShardingOptions options_;
  std::vector<std::string> devices_;
  std::vector<std::regex> patterns_;
  std::string split_axis_;  // the one mesh axis longer than 1 ("" if none)
  std::shared_ptr<comm::InProcessCommunicator> comm_;
  mutable std::mutex warned_mutex_;
  mutable bool warned_ = false;
};
}  // namespace

StrategyPtr ModelSplit(const DeviceMesh& mesh, const LayoutMap& layout_map, const ShardingOptions& options) {
  return std::make_shared<ShardingStrategy>(mesh, layout_map, options);
}

}  // namespace tandem::distribute
