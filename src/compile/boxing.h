// Boxing: the communication that turns a value's layout on some devices into another layout on
// the same or other devices, added as nodes to the per-device graphs. partial → replicated is an
// all-reduce, split → replicated an all-gather, partial → split a reduce-scatter, replicated →
// split a local slice, split → another split an all-gather and a slice, one device → another a
// send/recv pair.
#pragma once

#include <vector>

#include "graph/graph.h"
#include "graph/layout.h"

namespace tandem::compile {

// A value of the global graph as the devices hold it.
struct Located {
  std::vector<int> devices;       // ascending device indices
  graph::Layout layout;
  std::vector<graph::Value> part; // per device index (invalid where the device has none)
  TensorType type;                // the global value's type
  graph::Phase phase = graph::Phase::Forward;
  int stage = 0;  // the pipeline chunk whose blocks hold the nodes that work on it
  graph::Value on(int device) const { return part[static_cast<std::size_t>(device)]; }
};

class Boxing {
 public:
  Boxing(std::vector<graph::Graph>& local, bool all_reduce_bf16) : local_(local), bf16_(all_reduce_bf16) {}
  // `v` as `want` on `devices`, for a reader in pipeline chunk `stage` (where a transfer lands).
  Located convert(const Located& v, const std::vector<int>& devices, const graph::Layout& want, int stage);
  // Sums partial values over their (common) devices in one all-reduce: a bucket.
  std::vector<Located> all_reduce(const std::vector<Located>& parts);
  // A copy of `v` in a buffer of its own (an all-reduce works in place).
  Located copy(const Located& v);

 private:
  Located within(const Located& v, const graph::Layout& want);
  Located transfer(const Located& v, const std::vector<int>& devices, int stage);  // replicated → other devices
  Located pairwise(const Located& v, const std::vector<int>& devices, int stage);  // each part to its counterpart
  Located slice(const Located& v, const graph::Layout& want);            // replicated → split
  Located gather(const Located& v);                                      // even split → replicated
  Located scatter(const Located& v, const graph::Layout& want);          // partial → even split
  // A point-to-point transfer from one device to another, each its own tag: programs may reach
  // their transfers in other orders. Returns the value on `to`.
  graph::Value send(const Located& v, int from, int to, const TensorType& part, int stage);

  std::vector<graph::Graph>& local_;
  bool bf16_;
  int next_bucket_ = 0;
  int next_tag_ = 0;
};

}  // namespace tandem::compile
