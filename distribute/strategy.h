// A strategy is a description: where the nodes of a step run, how its feeds and variables lie
// over the devices, the micro-batch schedule (compile::LoweringOptions). The lowering pass
// (compile/lower.h) turns it into programs; no strategy calls it. A strategy owns no kernels.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "compile/lower.h"
#include "compile/plan.h"
#include "tandem/distribute.h"

namespace tandem::comm {
class Communicator;
}

namespace tandem::distribute {

// Where one layer runs: its pipeline stage (and chunk, where stages are interleaved), and its
// devices.
struct LayerPlace {
  std::string layer;
  int stage = -1;  // -1: not a pipeline's
  int chunk = -1;  // -1: one chunk per stage
  std::vector<std::string> devices;
};

// What summary() prints below Keras's table for a strategy that places layers: a table of its
// own and lines of notes under it; and the placement itself, as data, which the table's rows
// show and plot_model colours by.
struct PlacementTable {
  std::string title;
  std::vector<std::string> header;
  std::vector<bool> right;  // right-aligned columns
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;
  std::vector<LayerPlace> layers;  // empty where every layer runs everywhere
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::vector<std::string> devices() const = 0;
  // How the global graph of one step (one micro-batch of it: forward, loss, metrics, backward,
  // updates) becomes one program per device that runs `micro_batches` of them per step.
  virtual compile::LoweringOptions describe(const graph::Graph& g, int micro_batches) const = 0;
  // Micro-batches each batch is cut into (the model sums their gradients before the update).
  virtual int micro_batches() const { return 1; }
  // Refuses a training batch size the strategy cannot run (fit's batch_size).
  virtual void check_batch(int64_t /*rows*/) const {}
  virtual std::shared_ptr<comm::Communicator> communicator() const { return nullptr; }
  // Training steps per weight update: gradients of the others are accumulated locally.
  virtual int sync_every() const { return 1; }
  // Where the layers of a training step's graph `g` go, for summary(); empty where every layer
  // runs everywhere.
  virtual PlacementTable placement(const graph::Graph& /*g*/) const { return {}; }
  // Threads for each device's own pool: the machine's cores shared by the devices.
  virtual int threads_per_device() const;

  // Processes that train together (MultiWorkerMirrored; a strategy over devices named
  // "worker:W/...", distribute/workers.cpp): each runs the programs of its own devices, and what
  // the host reads after a step is combined with the other workers'. Every worker makes these
  // calls at the same points, in the same order.
  int workers() const;
  // In place: the sums over the workers, the same bits on every worker.
  void sum_over_workers(std::vector<double>& values) const;
  // `worker`'s bytes, on every worker.
  void from_worker(int worker, void* data, std::size_t bytes) const;
  void from_chief(void* data, std::size_t bytes) const { from_worker(0, data, bytes); }
  // `host` holds the parts of a value at this worker's `places` of `layout` (the places of the
  // programs that hold it, compile::FetchSite): blocks of rows of `row_bytes` each for a split,
  // else one whole copy of `row_bytes`. Fills in the rest from the workers that hold them.
  void gather_rows(std::byte* host, std::size_t row_bytes, const graph::Layout& layout, const std::vector<int>& places) const;
  // Whether some worker holds only part of the variables (a pipeline's stages, a model split
  // over workers): reading them then takes every worker (Model::Impl::share_over_workers).
  virtual bool spreads_variables() const { return workers() > 1; }

 protected:
  // For a strategy over `program_devices` (in program order) where they name the devices of
  // several workers ("worker:W/cpu:0"): checks that each worker's devices are consecutive and as
  // many as every other worker's, and keeps this worker's (local_devices_, the programs it runs
  // and across_, the communicator between the workers). Otherwise all of them are this process's.
  void span_workers(const std::string& strategy, const std::vector<std::string>& program_devices);
  // This worker's programs among the lowered ones.
  void keep_this_workers(compile::LoweringOptions& o) const {
    o.first_program = first_program_;
    o.program_count = program_count_;
  }
  std::vector<std::string> local_devices_;  // this process's devices, by their own names
  std::shared_ptr<comm::Communicator> across_;  // between the workers; null: this process alone
  int first_program_ = 0, program_count_ = -1;
};

// A feed split by rows over the `k` devices that share it (the first rows % k take one more).
// Fewer rows than devices is a ValueError: "<strategy>: a <what> of R rows cannot be split
// <across>; use <what>es of at least k rows".
graph::Layout split_rows(const graph::Node& feed, int k, const std::string& strategy, const std::string& what, const std::string& across);

// Data parallelism (Mirrored's): every node on every one of `devices`, the batch split by rows,
// gradients summed in buckets that start while backward runs.
compile::LoweringOptions data_parallel(int micro_batches, const std::string& strategy, const std::vector<std::string>& devices, std::size_t bucket_bytes,
                                       bool all_reduce_bf16, ShardLevel shard = ShardLevel::None);

// `devices` in canonical form ("cpu" -> "cpu:0", "worker:1/cpu" -> "worker:1/cpu:0"); an empty
// list, one naming a device twice, a worker that is not among this process's, or a list that
// names the workers of some devices but not of others is a ValueError that names `strategy`.
std::vector<std::string> distinct_devices(const std::string& strategy, const std::vector<std::string>& devices);

}  // namespace tandem::distribute
