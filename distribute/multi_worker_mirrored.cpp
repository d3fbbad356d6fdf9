// MultiWorkerMirrored: Mirrored across processes. Every worker lowers the same global step over
// the devices of all workers (worker w's device d is replica w·L + d) and keeps the programs of
// its own devices, so each feeds its rows of every batch, the loss is scaled by the global row
// count, and a dropout mask is the one single-device training draws for that row. Gradients are
// summed within the worker, then between workers over MPI (comm/two_level.h).
#include <chrono>

#include "comm/communicator.h"
#include "comm/inprocess.h"
#include "comm/two_level.h"
#include "comm/world.h"
#include "distribute/strategy.h"
#include "tandem/errors.h"

namespace tandem::distribute {

namespace {
class MultiWorkerMirroredStrategy : public Strategy {
 public:
  MultiWorkerMirroredStrategy(const std::vector<std::string>& local_devices, MultiWorkerMirroredOptions o)
      : devices_(distinct_devices("MultiWorkerMirrored", local_devices)), options_(o), me_(comm::world()) {
    if (o.bucket_bytes < 1) throw ValueError("MultiWorkerMirrored: bucket_bytes must be >= 1, got " + std::to_string(o.bucket_bytes));
    if (o.timeout_ms < 1) throw ValueError("MultiWorkerMirrored: timeout_ms must be >= 1, got " + std::to_string(o.timeout_ms));
    const std::chrono::milliseconds timeout(o.timeout_ms);
    auto local = std::make_shared<comm::InProcessCommunicator>(devices_);
    local->set_timeout(timeout);
    local_devices_ = devices_;
    if (me_.count == 1) {
      comm_ = local;
      return;
    }
    across_ = comm::worker_communicator();
    first_program_ = me_.rank * static_cast<int>(devices_.size());  // this worker's replicas
    program_count_ = static_cast<int>(devices_.size());
    across_->set_timeout(timeout);
    check_same_device_count();
    comm_ = std::make_shared<comm::TwoLevelCommunicator>(local, across_, me_.rank);
    comm_->set_timeout(timeout);
  }

  std::vector<std::string> devices() const override { return devices_; }
  std::shared_ptr<comm::Communicator> communicator() const override { return comm_; }
  // Every replica holds all of them, unless sharded.
  bool spreads_variables() const override { return options_.shard != ShardLevel::None && Strategy::spreads_variables(); }

  compile::LoweringOptions describe(const graph::Graph&, int micro_batches) const override {
    std::vector<std::string> all;
    for (int w = 0; w < me_.count; ++w) all.insert(all.end(), devices_.begin(), devices_.end());
    compile::LoweringOptions o =
        data_parallel(micro_batches, "MultiWorkerMirrored", all, static_cast<std::size_t>(options_.bucket_bytes), options_.all_reduce_bf16,
                      options_.shard);
    keep_this_workers(o);
    return o;
  }

 private:
  void check_same_device_count() const {
    std::vector<double> counts(static_cast<std::size_t>(me_.count), 0.0);
    counts[static_cast<std::size_t>(me_.rank)] = static_cast<double>(devices_.size());
    across_->all_reduce(me_.rank, counts.data(), counts.size(), DType::F64, comm::ReduceOp::Sum);
    std::string listed;
    bool same = true;
    for (std::size_t w = 0; w < counts.size(); ++w) {
      listed += (w ? ", " : "") + std::to_string(static_cast<int>(counts[w]));
      same = same && counts[w] == counts[0];
    }
    if (!same) throw ValueError("MultiWorkerMirrored: every worker needs the same number of local devices, got " + listed + " (workers 0.." +
                                std::to_string(me_.count - 1) + ")");
  }

  std::vector<std::string> devices_;
  MultiWorkerMirroredOptions options_;
  Worker me_;
  std::shared_ptr<comm::Communicator> comm_;
};
}  // namespace

StrategyPtr MultiWorkerMirrored(const std::vector<std::string>& local_devices, const MultiWorkerMirroredOptions& options) {
  return std::make_shared<MultiWorkerMirroredStrategy>(local_devices, options);
}

Worker this_worker() { return comm::world(); }

}  // namespace tandem::distribute
