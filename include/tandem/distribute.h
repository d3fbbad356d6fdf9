// Distribution strategies: how a compiled model is lowered onto devices.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tandem::distribute {

class Strategy;  // defined in the library; users only construct and pass it
using StrategyPtr = std::shared_ptr<Strategy>;

// One device ("cpu", "cpu:0"): the whole program runs there, on all of this machine's cores.
StrategyPtr Default(const std::string& device = "cpu:0");

struct MirroredOptions {
  int64_t bucket_bytes = 25 << 20;  // gradients per all-reduce (PyTorch DDP's default, 25 MB)
  bool all_reduce_bf16 = false;     // send gradients as bfloat16: half the bytes, sums in float32
  int64_t timeout_ms = 60000;       // a collective that waits longer raises an error
  // Synchronise every k steps: the k − 1 steps between add their gradients locally (like DDP's
  // no_sync) and the k-th all-reduces the sum and updates once with its mean — k batches
  // make one update, and all-reduce traffic falls k-fold.
  int64_t sync_every = 1;
};

// Data parallelism over devices ("cpu:0", "cpu:1", ...; virtual CPU devices share the cores):
// each replica trains on its share of every batch and gradients are averaged by all-reduce.
StrategyPtr Mirrored(const std::vector<std::string>& devices, const MirroredOptions& options = {});

}  // namespace tandem::distribute
