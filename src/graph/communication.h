// What a communication node does and among whom: the collective or transfer, the ranks (the
// plan's programs) it spans, and what its kernels need to meet their counterparts. The
// lowering's boxing makes these; the ops' shape inference, the kernels and the runtime read them.
#pragma once

#include <cstdint>
#include <vector>

namespace tandem::graph {

struct Communication {
  // Each kind is one op (op_name): a gradient bucket's all-reduce is a start, which hands the
  // bucket to the device's communication thread, and a wait, which yields the sums in place.
  enum class Kind : uint8_t { AllReduceStart, AllReduceWait, AllGather, ReduceScatter, Send, Recv };
  // What travels for a reduction: the values' own type, or bfloat16 (half of float32's bytes).
  enum class Wire : uint8_t { Native, BFloat16 };

  Kind kind = Kind::AllGather;
  std::vector<int> group;  // a collective's ranks, ascending, every one of them listed
  int peer = -1;           // a send's or recv's other rank
  int tag = 0;             // matches a send with its recv when a pair of ranks has several
  int bucket = -1;         // an all-reduce's index in its program: its start and wait share it
  Wire wire = Wire::Native;
  bool mean = false;       // an all-reduce that averages instead of summing
};

// The op of each kind: "all_reduce_start", "all_reduce_wait", "all_gather", "reduce_scatter",
// "send", "recv".
const char* op_name(Communication::Kind kind);

}  // namespace tandem::graph
