// Pipeline: stages of contiguous layers on successive devices. In the lowering's terms: each
// layer's nodes (forward and backward share its scope) on its stage's device, the loss and the
// metrics on the last; everything else where the pass puts it (updates with their variables).
// The pass's send/recv carries activations forward and their gradients back, also across several
// stages for a skip connection. Each batch runs as micro-batches in a GPipe or 1F1B order.
#include <algorithm>
#include <set>

#include "compile/lower.h"
#include "comm/local.h"
#include "distribute/stages.h"
#include "distribute/strategy.h"
#include "distribute/weight_layouts.h"
#include "backend/device.h"
#include "tandem/errors.h"

namespace tandem::distribute {

namespace {
class PipelineStrategy : public Strategy {
 public:
  PipelineStrategy(const std::vector<std::string>& devices, PipelineOptions o)
      : devices_(distinct_devices("Pipeline", devices)), options_(std::move(o)) {
    check_positive(options_.replicas, "replicas");
    check_positive(options_.virtual_stages, "virtual_stages");
    check_positive(options_.micro_batches, "micro_batches");
    check_positive(options_.model_split, "model_split");
    if (options_.stages < 0) throw ValueError("Pipeline: stages must be >= 0, got " + std::to_string(options_.stages));
    replicas_ = static_cast<int>(options_.replicas);
    split_ = static_cast<int>(options_.model_split);
    if (split_ > 1) layouts_ = std::make_unique<WeightLayouts>("Pipeline", options_.layout_map, std::vector<std::string>{"model"});
    else if (!options_.layout_map.empty())
      throw ValueError("Pipeline: a layout_map splits weights over the devices of a model-split stage; it needs model_split >= 2, got " +
                       std::to_string(split_));
    chunks_ = static_cast<int>(options_.virtual_stages);
    const bool interleaved = options_.schedule == PipelineSchedule::Interleaved;
    if (interleaved != (chunks_ > 1))
      throw ValueError(interleaved ? "Pipeline: the Interleaved schedule needs virtual_stages >= 2, got " + std::to_string(chunks_)
                                   : "Pipeline: virtual_stages = " + std::to_string(chunks_) + " needs the Interleaved schedule");
    const int given = static_cast<int>(options_.boundaries.size()) + 1;  // chunks the boundaries make
    if (!options_.boundaries.empty() && given % chunks_ != 0)
      throw ValueError("Pipeline: " + std::to_string(given - 1) + " boundaries make " + std::to_string(given) +
                       " chunks, not a multiple of virtual_stages = " + std::to_string(chunks_));
    stages_ = !options_.boundaries.empty() ? given / chunks_
              : options_.stages > 0        ? static_cast<int>(options_.stages)
                                           : static_cast<int>(devices_.size()) / (replicas_ * split_);
    if (!options_.boundaries.empty() && options_.stages != 0 && options_.stages != stages_)
      throw ValueError("Pipeline: " + std::to_string(given - 1) + " boundaries make " + std::to_string(stages_) +
                       " stages, but stages = " + std::to_string(options_.stages));
    if (stages_ < 1 || static_cast<int>(devices_.size()) != stages_ * replicas_ * split_)
      throw ValueError("Pipeline: " + std::to_string(stages_) + " stages × " + std::to_string(replicas_) + " replicas" +
                       (split_ > 1 ? " × " + std::to_string(split_) + " model-split devices" : std::string()) + " need " +
                       std::to_string(stages_ * replicas_ * split_) + " devices, got " + std::to_string(devices_.size()));
    if (interleaved && options_.micro_batches % stages_ != 0)
      throw ValueError("Pipeline: the Interleaved schedule needs micro_batches to be a multiple of the " + std::to_string(stages_) +
                       " stages, got " + std::to_string(options_.micro_batches));
    comm_ = comm::devices_communicator(devices_, std::chrono::milliseconds(options_.timeout_ms));
    span_workers("Pipeline", devices_);
  }

  std::vector<std::string> devices() const override { return local_devices_; }
  std::shared_ptr<comm::Communicator> communicator() const override { return comm_; }
  int micro_batches() const override { return static_cast<int>(options_.micro_batches); }

  void check_batch(int64_t rows) const override {
    if (rows % options_.micro_batches != 0)
      throw ValueError("Pipeline: micro_batches = " + std::to_string(options_.micro_batches) + " does not divide the batch of " +
                       std::to_string(rows) + " rows; choose a batch_size that is a multiple of it");
  }

  compile::LoweringOptions describe(const graph::Graph& g, int micro_batches) const override {
    const int stages = stages_, replicas = replicas_, chunks = chunks_, last = stages * chunks - 1;
    const std::map<std::string, int> chunk_of = assign_stages(g, options_.boundaries, stages * chunks, stages);
    auto chunk = [chunk_of, last](const graph::Node& n) {
      if (n.role == graph::Role::Loss || n.phase == graph::Phase::Metric) return last;
      const auto it = chunk_of.find(n.scope);
      return it == chunk_of.end() ? -1 : it->second;
    };
    // A stage's devices: a replicas × model_split mesh (one axis without a model split).
    auto mesh = [this](int c) {
      std::vector<int> devices;
      for (int d : group_of(c))
        for (int j = 0; j < split_; ++j) devices.push_back(d * split_ + j);
      return compile::Placement{devices, split_ > 1 ? std::vector<int>{replicas_, split_} : std::vector<int>{}};
    };
    compile::LoweringOptions o;
    o.devices = devices_;
    o.place = [=](const graph::Node& n) {
      const int c = chunk(n);
      return c < 0 ? compile::Placement{} : mesh(c);
    };
    o.stage = chunk;
    o.feed_layout = [](const graph::Node& feed, const std::vector<int>& mesh) {  // the replicas of a stage split the rows
      graph::MeshLayout l = graph::MeshLayout::replicated(mesh.size());
      l.axes[0] = split_rows(feed, mesh[0], "Pipeline", "micro-batch", "across " + std::to_string(mesh[0]) + " replicas");
      return l;
    };
    if (split_ > 1) {
      // A variable read on several stages (a step counter) lies on a mesh of one axis: whole.
      o.variable_layout = [this](const graph::VariableInfo& v, const std::vector<int>& mesh) {
        if (mesh.size() == 1) return graph::MeshLayout(graph::Layout::replicated());
        return graph::MeshLayout({graph::Layout::replicated(), layouts_->split_over(v, "model", mesh[1])});
      };
      layouts_->warn_unmatched(g);
    }
    o.micro_batches = micro_batches;
    // Device d is in group d / model_split, of stage group / replicas: how many micro-batches it
    // holds at once, and in which order.
    const int split = split_;
    auto stage_of = [=](int d) { return d / split / replicas; };
    switch (options_.schedule) {
      case PipelineSchedule::GPipe:
        o.in_flight = [=](int) { return micro_batches; };
        break;
      case PipelineSchedule::OneFOneB:
        // Stage s warms up with S − s − 1 forwards, so it holds at most S − s micro-batches.
        o.in_flight = [=](int d) { return std::min(micro_batches, stages - stage_of(d)); };
        o.schedule = [=](const compile::Program& p, int d) { return compile::one_forward_one_backward(p, stages - stage_of(d) - 1); };
        break;
      case PipelineSchedule::Interleaved:
        o.in_flight = [=](int) { return micro_batches; };
        // A partial batch's micro-batches may not be a multiple of the stages: those steps run GPipe.
        if (micro_batches % stages == 0)
          o.schedule = [=](const compile::Program& p, int d) { return compile::interleaved_one_forward_one_backward(p, stages, stage_of(d), chunks); };
        break;
    }
    keep_this_workers(o);
    return o;
  }

  PlacementTable placement(const graph::Graph& g) const override {
    const std::vector<LayerCost> costs = layer_costs(g);
    const std::map<std::string, int> chunk_of = assign_stages(g, options_.boundaries, stages_ * chunks_, stages_);
    double total = 0;
    for (const LayerCost& c : costs) total += c.cost;
    auto share = [total](double flops) { return percent(total > 0 ? flops / total : 0); };
    PlacementTable t;
    t.title = "Pipeline: " + std::to_string(stages_) + " stages" + (replicas_ > 1 ? " × " + std::to_string(replicas_) + " replicas" : "") +
              (split_ > 1 ? " × " + std::to_string(split_) + " model-split devices" : "") + ", " + schedule_name();
    t.header = {"Layer", chunks_ > 1 ? "Stage (chunk)" : "Stage", "Devices", "Cost share"};
    t.right = {false, false, false, true};
    std::vector<double> stage_flops(static_cast<std::size_t>(stages_), 0);
    for (const LayerCost& c : costs) {
      const int chunk = chunk_of.at(c.layer), stage = chunk % stages_;
      stage_flops[static_cast<std::size_t>(stage)] += c.cost;
      LayerPlace place{c.layer, stage, chunks_ > 1 ? chunk : -1, {}};
      for (int d : group_of(chunk))
        for (int j = 0; j < split_; ++j) place.devices.push_back(devices_[static_cast<std::size_t>(d * split_ + j)]);
      std::string where = std::to_string(stage);
      if (chunks_ > 1) where += " (" + std::to_string(chunk) + ")";
      t.rows.push_back({c.layer, where, device_names(chunk), share(c.cost)});
      t.layers.push_back(std::move(place));
    }
    for (int s = 0; s < stages_; ++s) {
      std::string line = "Stage " + std::to_string(s) + " on " + device_names(s) + ": ";
      line += share(stage_flops[static_cast<std::size_t>(s)]);
      line += " of the estimated cost (forward and backward FLOPs)";
      t.notes.push_back(line);
    }
    // The idle share of a step: a device works its chunks' cost on each of the M micro-batches; a
    // step lasts about the busiest stage's work stretched by the pipeline's fill and drain,
    // (v·M + S − 1)/(v·M), so a balanced pipeline idles (S − 1)/(v·M + S − 1) and an unbalanced one
    // idles more, waiting for its busiest stage.
    const double work = chunks_ * static_cast<double>(options_.micro_batches), fill = stages_ - 1.0;
    const auto busiest = std::max_element(stage_flops.begin(), stage_flops.end());
    const double evenness = *busiest > 0 ? total / stages_ / *busiest : 1.0;
    std::string bubble = std::to_string(options_.micro_batches) + " micro-batches per batch; an estimated step idles ";
    bubble += percent(1 - evenness * work / (work + fill));
    bubble += " of each device's time";
    if (evenness < 0.95) {
      bubble += " (the bubble, " + percent(fill / (work + fill)) + ", and waiting for stage " +
                std::to_string(busiest - stage_flops.begin()) + ", the busiest)";
    } else {
      bubble += " in the bubble";
    }
    t.notes.push_back(bubble);
    return t;
  }

 private:
  std::vector<int> group_of(int chunk) const {  // chunk c runs on stage c mod S, its replicas' groups
    std::vector<int> devices;
    for (int r = 0; r < replicas_; ++r) devices.push_back(chunk % stages_ * replicas_ + r);
    return devices;
  }
  std::string device_names(int chunk) const {
    std::string names;
    for (int d : group_of(chunk))
      for (int j = 0; j < split_; ++j) {
        if (!names.empty()) names += ", ";
        names += devices_[static_cast<std::size_t>(d * split_ + j)];
      }
    return names;
  }
  std::string schedule_name() const {
    switch (options_.schedule) {
      case PipelineSchedule::GPipe: return "GPipe";
      case PipelineSchedule::OneFOneB: return "1F1B";
      case PipelineSchedule::Interleaved: return "interleaved 1F1B, " + std::to_string(chunks_) + " chunks per device";
    }
    return "";
  }
  static void check_positive(int64_t v, const char* name) {
    if (v < 1) throw ValueError(std::string("Pipeline: ") + name + " must be >= 1, got " + std::to_string(v));
  }

  std::vector<std::string> devices_;
  PipelineOptions options_;
  int stages_ = 1;
  int replicas_ = 1;
  int split_ = 1;  // devices per group (model_split)
  std::unique_ptr<WeightLayouts> layouts_;  // with model_split
  int chunks_ = 1;  // per device
  std::shared_ptr<comm::Communicator> comm_;
};
}  // namespace

StrategyPtr Pipeline(const std::vector<std::string>& devices, const PipelineOptions& options) {
  return std::make_shared<PipelineStrategy>(devices, options);
}

}  // namespace tandem::distribute
