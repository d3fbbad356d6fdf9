// Mirrored: data parallelism. Each device runs the whole step on its share of the batch; the
// gradients are summed across devices by a ring all-reduce in buckets that start while backward
// is still running (DDP's design); every device then applies the same update to its own copy of
// the variables, so the copies stay equal without a broadcast per step.
#include <algorithm>
#include <set>

#include "distribute/comm/inprocess.h"
#include "distribute/strategy.h"
#include "backend/device.h"
#include "graph/op_registry.h"
#include "tandem/errors.h"

namespace tandem::distribute {

namespace {
class MirroredStrategy : public Strategy {
 public:
  MirroredStrategy(std::vector<std::string> devices, MirroredOptions o) : options_(o) {
    if (devices.empty()) throw ValueError("Mirrored: expected at least one device, got none");
    std::set<std::string> seen;
    for (const std::string& d : devices) {
      const std::string name = backend::parse_device(d).str();
      if (!seen.insert(name).second) throw ValueError("Mirrored: device '" + name + "' is listed twice");
      devices_.push_back(name);
    }
    if (o.sync_every < 1) throw ValueError("Mirrored: sync_every must be >= 1, got " + std::to_string(o.sync_every));
    if (o.bucket_bytes < 1) throw ValueError("Mirrored: bucket_bytes must be >= 1, got " + std::to_string(o.bucket_bytes));
    comm_ = std::make_shared<comm::InProcessCommunicator>(devices_);
    comm_->set_timeout(std::chrono::milliseconds(o.timeout_ms));
  }

  std::vector<std::string> devices() const override { return devices_; }
  std::shared_ptr<comm::Communicator> communicator() const override { return comm_; }
  int sync_every() const override { return static_cast<int>(options_.sync_every); }

  std::vector<Replica> split(int64_t rows) const override {
    const auto k = static_cast<int64_t>(devices_.size());
    if (rows < k)
      throw ValueError("Mirrored: a batch of " + std::to_string(rows) + " rows cannot be split across " + std::to_string(k) +
                       " replicas; use batches of at least " + std::to_string(k) + " rows");
    std::vector<Replica> out;
    int64_t offset = 0;
    for (int64_t r = 0; r < k; ++r) {  // the first rows % k replicas take one extra row
      const int64_t n = rows / k + (r < rows % k ? 1 : 0);
      out.push_back({n, offset});
      offset += n;
    }
    return out;
  }

  compile::Plan lower_replicas(std::vector<graph::Graph> replicas, const std::vector<graph::Value>& fetches) const override {
    if (replicas.size() != devices_.size()) throw Error("internal: Mirrored got a graph count unlike its device count");
    compile::Plan plan;
    for (std::size_t r = 0; r < replicas.size(); ++r) {
      insert_all_reduce(replicas[r]);
      plan.programs.push_back(single_program(devices_[r], std::move(replicas[r]), fetches));
      plan.schedule.push_back(run_all_blocks(plan.programs.back()));
    }
    return plan;
  }

 private:
  // Gradients go into buckets in the order backward produces them (the last layers first); each
  // bucket's all-reduce starts once its last gradient exists and is awaited before the updates.
  void insert_all_reduce(graph::Graph& g) const {
    struct Use {
      int update;
      graph::Value grad;
    };
    std::vector<Use> uses;
    for (int id = 0; id < g.size(); ++id) {
      const int gi = g.node(id).def->gradient_input;
      if (gi >= 0) uses.push_back({id, g.node(id).inputs[static_cast<std::size_t>(gi)]});
    }
    std::stable_sort(uses.begin(), uses.end(), [](const Use& a, const Use& b) { return a.grad.node < b.grad.node; });
    std::vector<std::vector<Use>> buckets;
    std::size_t bytes = 0;
    for (const Use& u : uses) {
      const std::size_t b = g.type(u.grad).bytes();
      if (buckets.empty() || bytes + b > static_cast<std::size_t>(options_.bucket_bytes)) {
        buckets.emplace_back();
        bytes = 0;
      }
      buckets.back().push_back(u);
      bytes += b;
    }
    graph::ScopeGuard phase(g, graph::Phase::Backward);
    graph::ScopeGuard scope(g, "mirrored");
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      std::vector<graph::Value> grads;
      for (const Use& u : buckets[b]) grads.push_back(u.grad);
      const graph::Attrs attrs{{"bucket", static_cast<int64_t>(b)}, {"mean", false}, {"bf16", options_.all_reduce_bf16}};
      g.add_multi("all_reduce_start", grads, attrs);
      const int start = g.size() - 1;
      const std::vector<graph::Value> reduced = g.add_multi("all_reduce_wait", grads, attrs);
      g.node(g.size() - 1).after = {start};
      for (std::size_t i = 0; i < buckets[b].size(); ++i) {
        graph::Node& update = g.node(buckets[b][i].update);
        update.inputs[static_cast<std::size_t>(update.def->gradient_input)] = reduced[i];
      }
    }
  }

  std::vector<std::string> devices_;
  MirroredOptions options_;
  std::shared_ptr<comm::InProcessCommunicator> comm_;
};
}  // namespace

StrategyPtr Mirrored(const std::vector<std::string>& devices, const MirroredOptions& options) {
  return std::make_shared<MirroredStrategy>(devices, options);
}

}  // namespace tandem::distribute
