// Mirrored: data parallelism. Each device runs the whole step on its share of the batch; the
// gradients are summed across devices by a ring all-reduce in buckets that start while backward
// is still running (DDP's design); every device then applies the same update to its own copy of
// the variables, so the copies stay equal without a broadcast per step.
#include "compile/lower.h"
#include "comm/local.h"
#include "distribute/strategy.h"
#include "backend/device.h"
#include "tandem/errors.h"

namespace tandem::distribute {

// Data parallel in the lowering's terms: every node on every device, the batch split by rows (the
// first rows % k devices take one more), so the weights are replicated, gradients come out
// partial and the pass sums them in bucketed all-reduces that overlap backward.
namespace {
// Sharded (ShardLevel::Weights): the weights whose rows the k devices divide, and their slots.
bool sharded(const graph::VariableInfo& v, int k) {
  const Shape& s = v.type.shape;
  return (v.trainable || !v.slot_of.empty()) && s.rank() >= 1 && s[0] >= k && s[0] % k == 0;
}
}  // namespace

compile::LoweringOptions data_parallel(int micro_batches, const std::string& strategy, const std::vector<std::string>& devices, std::size_t bucket_bytes,
                                       bool all_reduce_bf16, ShardLevel shard) {
  std::vector<int> all(devices.size());
  for (std::size_t d = 0; d < all.size(); ++d) all[d] = static_cast<int>(d);
  compile::LoweringOptions o;
  o.devices = devices;
  o.place = [all](const graph::Node&) { return all; };
  o.feed_layout = [strategy](const graph::Node& feed, const std::vector<int>& mesh) {
    return split_rows(feed, mesh[0], strategy, "batch", "across " + std::to_string(mesh[0]) + " replicas");
  };
  if (shard == ShardLevel::Weights) {
    o.variable_layout = [](const graph::VariableInfo& v, const std::vector<int>& mesh) {
      return sharded(v, mesh[0]) ? graph::Layout::even_split(0, v.type.shape[0], mesh[0]) : graph::Layout::replicated();
    };
    o.gather_variables_for_use = true;
  }
  o.bucket_bytes = bucket_bytes;
  o.all_reduce_bf16 = all_reduce_bf16;
  o.micro_batches = micro_batches;
  return o;
}

namespace {
class MirroredStrategy : public Strategy {
 public:
  MirroredStrategy(const std::vector<std::string>& devices, MirroredOptions o) : devices_(distinct_devices("Mirrored", devices)), options_(o) {
    if (o.sync_every < 1) throw ValueError("Mirrored: sync_every must be >= 1, got " + std::to_string(o.sync_every));
    if (o.bucket_bytes < 1) throw ValueError("Mirrored: bucket_bytes must be >= 1, got " + std::to_string(o.bucket_bytes));
    comm_ = comm::devices_communicator(devices_, std::chrono::milliseconds(o.timeout_ms));
    span_workers("Mirrored", devices_);
  }

  std::vector<std::string> devices() const override { return local_devices_; }
  std::shared_ptr<comm::Communicator> communicator() const override { return comm_; }
  // Every replica holds all of them, unless sharded over the devices of several workers.
  bool spreads_variables() const override { return options_.shard != ShardLevel::None && Strategy::spreads_variables(); }
  int sync_every() const override { return static_cast<int>(options_.sync_every); }

  compile::LoweringOptions describe(const graph::Graph&, int micro_batches) const override {
    compile::LoweringOptions o =
        data_parallel(micro_batches, "Mirrored", devices_, static_cast<std::size_t>(options_.bucket_bytes), options_.all_reduce_bf16, options_.shard);
    keep_this_workers(o);
    return o;
  }

 private:
  std::vector<std::string> devices_;
  MirroredOptions options_;
  std::shared_ptr<comm::Communicator> comm_;
};
}  // namespace

StrategyPtr Mirrored(const std::vector<std::string>& devices, const MirroredOptions& options) {
  return std::make_shared<MirroredStrategy>(devices, options);
}

}  // namespace tandem::distribute
