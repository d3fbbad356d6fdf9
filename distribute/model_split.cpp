// ModelSplit by placement: each layer's nodes (forward and backward share its scope) on the
// device the placement names, the loss and metrics with the last layer; the lowering places the
// updates with their variables and adds send/recv wherever a value crosses devices. One
// micro-batch runs at a time, so the devices take turns (Pipeline overlaps them).
#include <algorithm>

#include "backend/device.h"
#include "compile/lower.h"
#include "comm/local.h"
#include "distribute/stages.h"
#include "distribute/strategy.h"
#include "tandem/errors.h"

namespace tandem::distribute {

namespace {
std::string names(const std::vector<LayerCost>& layers) {
  std::string s;
  for (const LayerCost& l : layers) s += (s.empty() ? "" : ", ") + l.layer;
  return s;
}

class ModelSplitStrategy : public Strategy {
 public:
  ModelSplitStrategy(const std::vector<std::string>& devices, ModelSplitOptions o)
      : devices_(distinct_devices("ModelSplit", devices)), options_(std::move(o)) {
    for (const auto& [layer, device] : options_.placement) index_of(device, layer);
    comm_ = comm::devices_communicator(devices_, std::chrono::milliseconds(options_.timeout_ms));
    span_workers("ModelSplit", devices_);
  }

  std::vector<std::string> devices() const override { return local_devices_; }
  std::shared_ptr<comm::Communicator> communicator() const override { return comm_; }

  compile::LoweringOptions describe(const graph::Graph& g, int micro_batches) const override {
    const std::map<std::string, int> device_of = place_layers(g);
    const int last = device_of.empty() ? 0 : device_of.at(parameter_bytes(g).back().layer);
    compile::LoweringOptions o;
    o.devices = devices_;
    o.place = [device_of, last](const graph::Node& n) -> std::vector<int> {
      if (n.role == graph::Role::Loss || n.phase == graph::Phase::Metric) return {last};
      const auto it = device_of.find(n.scope);
      return it == device_of.end() ? std::vector<int>{} : std::vector<int>{it->second};
    };
    o.micro_batches = micro_batches;
    keep_this_workers(o);
    return o;
  }

  PlacementTable placement(const graph::Graph& g) const override {
    const std::vector<LayerCost> layers = parameter_bytes(g);
    const std::map<std::string, int> device_of = place_layers(g);
    double total = 0;
    std::vector<double> per_device(devices_.size(), 0);
    for (const LayerCost& l : layers) {
      total += l.cost;
      per_device[static_cast<std::size_t>(device_of.at(l.layer))] += l.cost;
    }
    auto share = [total](double bytes) { return percent(total > 0 ? bytes / total : 0); };
    PlacementTable t{"ModelSplit: layers on " + std::to_string(devices_.size()) + " devices", {"Layer", "Device", "Parameter bytes", "Share"},
                     {false, false, true, true}, {}, {}};
    for (const LayerCost& l : layers) {
      const std::string& device = devices_[static_cast<std::size_t>(device_of.at(l.layer))];
      t.rows.push_back({l.layer, device, std::to_string(static_cast<int64_t>(l.cost)), share(l.cost)});
      t.layers.push_back({l.layer, -1, -1, {device}});
    }
    for (std::size_t d = 0; d < devices_.size(); ++d)
      t.notes.push_back(devices_[d] + ": " + std::to_string(static_cast<int64_t>(per_device[d])) + " parameter bytes (" + share(per_device[d]) +
                        ")");
    return t;
  }

 private:
  int index_of(const std::string& device, const std::string& layer) const {
    const std::string name = backend::parse_device(device).str();
    for (std::size_t d = 0; d < devices_.size(); ++d)
      if (devices_[d] == name) return static_cast<int>(d);
    std::string list;
    for (const std::string& d : devices_) list += (list.empty() ? "" : ", ") + d;
    throw ValueError("ModelSplit: placement puts layer '" + layer + "' on '" + name + "', which is not one of the strategy's devices (" +
                     list + ")");
  }

  // Layer scope -> device index, in the model's layer order.
  std::map<std::string, int> place_layers(const graph::Graph& g) const {
    const std::vector<LayerCost> layers = parameter_bytes(g);
    for (const auto& [layer, device] : options_.placement)
      if (std::none_of(layers.begin(), layers.end(), [&](const LayerCost& l) { return l.layer == layer; }))
        throw ValueError("ModelSplit: placement names layer '" + layer + "', which is not a layer of the model; its layers are " + names(layers));
    std::map<std::string, int> device_of;
    if (!options_.placement.empty()) {
      int current = 0;
      for (const LayerCost& l : layers) {
        if (auto it = options_.placement.find(l.layer); it != options_.placement.end()) current = index_of(it->second, l.layer);
        device_of[l.layer] = current;
      }
      return device_of;
    }
    const int k = static_cast<int>(devices_.size());
    if (static_cast<int>(layers.size()) < k)
      throw ValueError("ModelSplit: " + std::to_string(k) + " devices for a model of " + std::to_string(layers.size()) + " layers (" +
                       names(layers) + "); use at most " + std::to_string(layers.size()) + " devices or name a placement");
    const std::vector<std::size_t> firsts = balanced_cuts(layers, k);
    for (std::size_t d = 0; d < firsts.size(); ++d) {
      const std::size_t end = d + 1 < firsts.size() ? firsts[d + 1] : layers.size();
      for (std::size_t i = firsts[d]; i < end; ++i) device_of[layers[i].layer] = static_cast<int>(d);
    }
    return device_of;
  }

  std::vector<std::string> devices_;
  ModelSplitOptions options_;
  std::shared_ptr<comm::Communicator> comm_;
};
}  // namespace

StrategyPtr ModelSplit(const std::vector<std::string>& devices, const ModelSplitOptions& options) {
  return std::make_shared<ModelSplitStrategy>(devices, options);
}

}  // namespace tandem::distribute
