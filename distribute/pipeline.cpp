// Pipeline: stages of contiguous layers on successive devices. In the lowering's terms: each
// layer's nodes (forward and backward share its scope) on its stage's device, the loss and the
// metrics on the last; everything else where the pass puts it (updates with their variables).
// The pass's send/recv carries activations forward and their gradients back, also across several
// stages for a skip connection. Each batch runs as micro-batches in a GPipe or 1F1B order.
#include <set>

#include "compile/lower.h"
#include "distribute/comm/inprocess.h"
#include "distribute/stages.h"
#include "distribute/strategy.h"
#include "backend/device.h"
#include "tandem/errors.h"

namespace tandem::distribute {

namespace {
class PipelineStrategy : public Strategy {
 public:
  PipelineStrategy(std::vector<std::string> devices, PipelineOptions o) : options_(std::move(o)) {
    std::set<std::string> seen;
    for (const std::string& d : devices) {
      const std::string name = backend::parse_device(d).str();
      if (!seen.insert(name).second) throw ValueError("Pipeline: device '" + name + "' is listed twice");
      devices_.push_back(name);
    }
    if (!options_.boundaries.empty() && options_.stages != 0 &&
        options_.stages != static_cast<int64_t>(options_.boundaries.size()) + 1)
      throw ValueError("Pipeline: " + std::to_string(options_.boundaries.size()) + " boundaries make " +
                       std::to_string(options_.boundaries.size() + 1) + " stages, but stages = " + std::to_string(options_.stages));
    stages_ = !options_.boundaries.empty() ? static_cast<int>(options_.boundaries.size()) + 1
              : options_.stages > 0        ? static_cast<int>(options_.stages)
                                           : static_cast<int>(devices_.size());
    if (options_.stages < 0) throw ValueError("Pipeline: stages must be >= 0, got " + std::to_string(options_.stages));
    if (options_.replicas < 1) throw ValueError("Pipeline: replicas must be >= 1, got " + std::to_string(options_.replicas));
    replicas_ = static_cast<int>(options_.replicas);
    if (options_.boundaries.empty() && options_.stages == 0) stages_ = static_cast<int>(devices_.size()) / replicas_;
    if (stages_ < 1 || static_cast<int>(devices_.size()) != stages_ * replicas_)
      throw ValueError("Pipeline: " + std::to_string(stages_) + " stages × " + std::to_string(replicas_) + " replicas need " +
                       std::to_string(stages_ * replicas_) + " devices, got " + std::to_string(devices_.size()));
    if (options_.micro_batches < 1)
      throw ValueError("Pipeline: micro_batches must be >= 1, got " + std::to_string(options_.micro_batches));
    comm_ = std::make_shared<comm::InProcessCommunicator>(devices_);
    comm_->set_timeout(std::chrono::milliseconds(options_.timeout_ms));
  }

  std::vector<std::string> devices() const override { return devices_; }
  std::shared_ptr<comm::Communicator> communicator() const override { return comm_; }
  int micro_batches() const override { return static_cast<int>(options_.micro_batches); }

  void check_batch(int64_t rows) const override {
    if (rows % options_.micro_batches != 0)
      throw ValueError("Pipeline: micro_batches = " + std::to_string(options_.micro_batches) + " does not divide the batch of " +
                       std::to_string(rows) + " rows; choose a batch_size that is a multiple of it");
  }

  compile::Plan lower(const graph::Graph& g, const std::vector<graph::Value>& fetches, int micro_batches) const override {
    const std::map<std::string, int> stage_of = assign_stages(g, options_.boundaries, stages_);
    const int stages = stages_, replicas = replicas_;
    auto group = [replicas](int stage) {
      std::vector<int> devices;
      for (int r = 0; r < replicas; ++r) devices.push_back(stage * replicas + r);
      return devices;
    };
    compile::LoweringOptions o;
    o.devices = devices_;
    o.place = [stage_of, stages, group](const graph::Node& n) -> std::vector<int> {
      if (n.scope == "loss" || n.phase == graph::Phase::Metric) return group(stages - 1);
      if (auto it = stage_of.find(n.scope); it != stage_of.end()) return group(it->second);
      return {};
    };
    o.feed_layout = [](const graph::Node& feed, int k) {  // the replicas of a stage split the rows
      const int64_t rows = feed.outputs[0].shape.rank() ? feed.outputs[0].shape[0] : 0;
      if (rows < k)
        throw ValueError("Pipeline: a micro-batch of " + std::to_string(rows) + " rows cannot be split across " + std::to_string(k) +
                         " replicas; use micro-batches of at least " + std::to_string(k) + " rows");
      return graph::Layout::even_split(0, rows, k);
    };
    o.micro_batches = micro_batches;
    const bool gpipe = options_.schedule == PipelineSchedule::GPipe;
    // 1F1B: stage s warms up with S − s − 1 forwards, so it holds at most S − s micro-batches.
    o.in_flight = [=](int d) { return gpipe ? micro_batches : std::min(micro_batches, stages - d / replicas); };
    if (!gpipe)
      o.schedule = [=](const compile::Program& p, int d) { return compile::one_forward_one_backward(p, stages - d / replicas - 1); };
    return compile::lower(g, fetches, o);
  }

 private:
  std::vector<std::string> devices_;
  PipelineOptions options_;
  int stages_ = 1;
  int replicas_ = 1;
  std::shared_ptr<comm::InProcessCommunicator> comm_;
};
}  // namespace

StrategyPtr Pipeline(const std::vector<std::string>& devices, const PipelineOptions& options) {
  return std::make_shared<PipelineStrategy>(devices, options);
}

}  // namespace tandem::distribute
