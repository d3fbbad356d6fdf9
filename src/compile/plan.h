// What lowering produces and the runtime executes: per device a Program (its graph cut into
// blocks, with a memory plan) and a schedule of (block, micro-batch) actions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/layout.h"

namespace tandem::compile {

struct MemoryPlan {
  static constexpr int64_t kExternal = -1;      // variables: bound to storage the owner keeps
  std::vector<std::vector<int64_t>> offsets;    // [node][output] -> arena byte offset
  std::size_t arena_bytes = 0;                  // planned peak
};

struct Block {
  graph::Phase phase;
  std::vector<int> nodes;  // in execution order
};

// The rows of the global batch a device's feed receives.
struct FeedRows {
  int64_t offset = 0, rows = 0;
};

struct Program {
  std::string device;
  graph::Graph graph;
  std::vector<Block> blocks;
  MemoryPlan memory;
  // Values read back after a step (loss, metric sums, outputs), one per fetch of the plan;
  // invalid where the fetched value does not live on this device.
  std::vector<graph::Value> fetches;
  std::map<std::string, FeedRows> feeds;  // by placeholder name; absent: fed whole, or not read
};

// Where a fetched value lives: on which programs, and how their parts make it up (partial sums
// add up, splits concatenate in program order, a replicated value is read from the first).
struct FetchSite {
  graph::Layout layout;
  std::vector<int> programs;
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

// One device's program: the graph ordered, cut into blocks, memory-planned.
Program single_program(const std::string& device, graph::Graph g, const std::vector<graph::Value>& fetches);
// The schedule that runs each block of a program once.
std::vector<Action> run_all_blocks(const Program& p);

// The nodes needed for `fetches` and every side-effecting node, ordered by (phase, creation).
std::vector<int> execution_order(const graph::Graph& g, const std::vector<graph::Value>& fetches);
// Cuts an execution order into one block per phase.
std::vector<Block> blocks_by_phase(const graph::Graph& g, const std::vector<int>& order);
// Gives every intermediate an arena offset by liveness along `order`; fetched values stay live
// to the end; reshapes share their input's buffer.
MemoryPlan plan_memory(const graph::Graph& g, const std::vector<int>& order, const std::vector<graph::Value>& fetches);

}  // namespace tandem::compile
