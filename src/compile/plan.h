// What lowering produces and the runtime executes: per device a Program (its graph cut into
// blocks, with a memory plan) and a schedule of (block, micro-batch) actions.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/layout.h"

namespace tandem::compile {

// Where a step's values live. With one micro-batch the arena is one region planned by liveness.
// A step of m micro-batches runs its forward and backward blocks once per micro-batch, so a value
// lives in one of four regions, laid out in this order:
//   Step    for the whole step: micro-batch sums and what reads them (the updates), once;
//   Action  within one block's run: shared by every action, since a device runs one at a time;
//   Feed    a micro-batch's inputs, written before the step: m copies;
//   Slot    across a micro-batch's actions (forward activations backward reads): one copy per
//           micro-batch in flight, micro-batch j in copy j mod in_flight.
// arena_bytes = step + action + m·feed + in_flight·slot: each micro-batch more in flight costs
// one slot.
struct MemoryPlan {
  static constexpr int64_t kExternal = -1;      // variables: bound to storage the owner keeps
  enum class Region : uint8_t { Step, Action, Feed, Slot };
  std::vector<std::vector<int64_t>> offsets;    // [node][output] -> byte offset in its region
  std::vector<std::vector<Region>> regions;     // [node][output]
  std::size_t arena_bytes = 0;                  // planned peak
  std::size_t step_bytes = 0, action_bytes = 0, feed_bytes = 0, slot_bytes = 0;
  int micro_batches = 1, in_flight = 1;
  // The arena offset of output `output` of node `node` for micro-batch j (kExternal for
  // variables and views of them).
  int64_t address(int node, int output, int micro_batch) const;
};

struct Block {
  graph::Phase phase;
  std::vector<int> nodes;  // in execution order
  int stage = 0;           // the pipeline chunk of its nodes
  bool per_micro_batch() const { return phase != graph::Phase::Update; }
};

// The rows of the global batch a device's feed receives.
struct FeedRows {
  int64_t offset = 0, rows = 0;
};

// A block of a variable that one device holds when the variable is split over several: along
// each cut axis, its elements [offset, offset + extent). A variable split over two mesh axes is
// cut along two of its axes, or along one twice (the cuts then compose into one).
struct VariableShard {
  struct Cut {
    int axis = 0;
    int64_t offset = 0, extent = 0;
    bool operator==(const Cut&) const = default;
  };
  std::vector<Cut> cuts;
  bool operator==(const VariableShard&) const = default;
  // The block of a variable of type `type` laid out as `layout` that the device at mesh
  // coordinates `coords` holds, its cuts in the order the mesh axes make them; none: all of it.
  static std::optional<VariableShard> of(const graph::MeshLayout& layout, const TensorType& type, const std::vector<int>& coords) {
    const std::vector<std::pair<int64_t, int64_t>> block = layout.block(type, coords);
    VariableShard shard;
    for (const graph::Layout& l : layout.axes)
      if (l.is_split() && std::none_of(shard.cuts.begin(), shard.cuts.end(), [&](const Cut& c) { return c.axis == l.axis; }))
        shard.cuts.push_back({l.axis, block[static_cast<std::size_t>(l.axis)].first, block[static_cast<std::size_t>(l.axis)].second});
    if (shard.cuts.empty()) return std::nullopt;
    return shard;
  }
};

struct Program {
  std::string device;
  // This program's rank in the strategy's communicator: its index among all the programs the
  // strategy lowered to (a process that runs only some of them keeps their ranks); -1: its
  // index in the plan.
  int rank = -1;
  graph::Graph graph;
  std::vector<Block> blocks;
  MemoryPlan memory;
  // Values read back after a step (loss, metric sums, outputs), one per fetch of the plan;
  // invalid where the fetched value does not live on this device.
  std::vector<graph::Value> fetches;
  std::map<std::string, FeedRows> feeds;  // by placeholder name, per micro-batch; absent: not read
  // Nodes of a per-micro-batch block that read the micro-batches' sums: they run once, with the
  // last micro-batch (a gradient bucket's all-reduce). Empty with one micro-batch.
  std::vector<bool> once_per_step;
  std::map<int, VariableShard> shards;  // by variable id; absent: the device holds all of it
  int micro_batches() const { return memory.micro_batches; }
};

// Where a fetched value lives: on which programs, and how their parts make it up (partial sums
// add up, splits concatenate in program order, a replicated value is read from the first).
struct FetchSite {
  graph::Layout layout;
  std::vector<int> programs;
  // Each program's place in `layout` (its index among every program that holds the value, some
  // of which another process may run); empty: programs[i] is at place i.
  std::vector<int> places;
  int place(std::size_t i) const { return places.empty() ? static_cast<int>(i) : places[i]; }
};

struct Action {
  int block = 0;
  int micro_batch = 0;
};

struct Plan {
  std::vector<Program> programs;
  std::vector<std::vector<Action>> schedule;  // per program
  std::vector<FetchSite> fetches;
};

// One device's program: the graph fused (compile/fusion.h), ordered, cut into blocks, memory-planned for steps of
// `micro_batches` micro-batches of which `in_flight` are between forward and backward at once.
Program single_program(const std::string& device, graph::Graph g, const std::vector<graph::Value>& fetches,
                       int micro_batches = 1, int in_flight = 1);
// The schedule of a program's actions: with one micro-batch each block once. With several, one
// in flight: each micro-batch's forward and backward in turn (gradient accumulation); all in
// flight: every micro-batch's forward, then every backward (GPipe). The updates run once, last.
std::vector<Action> run_all_blocks(const Program& p);
// 1F1B (PipeDream-flush): `warmup` micro-batches' forwards, then one forward and one backward in
// turn, then the remaining backwards: at most warmup + 1 micro-batches in flight.
std::vector<Action> one_forward_one_backward(const Program& p, int warmup);
// Megatron's interleaved 1F1B for device `device` of `stages`, holding the chunks device,
// device + stages, ... (block.stage): forwards walk the chunks up in groups of `stages`
// micro-batches, backwards walk them down; warm-up (stages − device − 1)·2 + (chunks − 1)·stages.
std::vector<Action> interleaved_one_forward_one_backward(const Program& p, int stages, int device, int chunks);

// The nodes a step runs: the fetches, the nodes with side effects (updates, collectives), the
// nodes in `also`, and everything they read or come after.
std::vector<bool> needed_nodes(const graph::Graph& g, const std::vector<graph::Value>& fetches, const std::vector<int>& also = {});
// The nodes needed for `fetches` and every side-effecting node, ordered by (phase, creation).
std::vector<int> execution_order(const graph::Graph& g, const std::vector<graph::Value>& fetches);
// Cuts an execution order into one block per phase (and pipeline chunk).
std::vector<Block> blocks_by_phase(const graph::Graph& g, const std::vector<int>& order);
// Gives every intermediate an arena offset by liveness along `order`; fetched values stay live
// to the end; reshapes share their input's buffer.
MemoryPlan plan_memory(const graph::Graph& g, const std::vector<int>& order, const std::vector<graph::Value>& fetches);
// The regions of a step of several micro-batches (see MemoryPlan); `once_per_step` as in Program.
MemoryPlan plan_micro_batched_memory(const graph::Graph& g, const std::vector<Block>& blocks, const std::vector<graph::Value>& fetches,
                                     const std::vector<bool>& once_per_step, int micro_batches, int in_flight);
// Which nodes of per-micro-batch blocks read the micro-batches' sums (micro_sum outputs).
std::vector<bool> once_per_step_nodes(const graph::Graph& g, const std::vector<Block>& blocks);

}  // namespace tandem::compile
