// Lowering: one global graph (forward, loss, backward, updates for the whole batch) becomes one
// program per device. Every node gets a placement (the mesh of devices that runs it) and every
// value a layout on it, one entry per mesh axis (graph/layout.h); each op's layout rule says
// what it works on, axis by axis, and boxing inserts the communication where a value's layout is
// not what its reader needs. A strategy is a choice of placements and feed and variable layouts;
// the rest is this pass.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "compile/plan.h"

namespace tandem::compile {

// The devices that run a node, as a mesh: `devices` (indices into LoweringOptions::devices,
// ascending) in row-major order over `shape`. A value on a mesh has one layout entry per axis
// (graph::MeshLayout); its collectives run within the sub-groups of the axes they work along.
struct Placement {
  std::vector<int> devices;
  std::vector<int> shape;  // empty: one axis of devices.size()
  Placement(std::vector<int> devices = {}, std::vector<int> shape = {}) : devices(std::move(devices)), shape(std::move(shape)) {}  // NOLINT
};

struct LoweringOptions {
  std::vector<std::string> devices;
  // The devices that run a node; empty: the pass decides (a node follows its first placed input,
  // a variable or feed its readers, an update its variable).
  std::function<Placement(const graph::Node&)> place;
  // The pipeline chunk of a node (its blocks are cut per chunk, so a schedule can interleave
  // them); empty or -1: after its inputs' chunks, a source with its first reader's.
  std::function<int(const graph::Node&)> stage;
  // How a feed lies over the mesh of its devices (its shape given); empty: replicated.
  std::function<graph::MeshLayout(const graph::Node& feed, const std::vector<int>& mesh)> feed_layout;
  // How a variable lies over the mesh of the devices that hold it (a split: each keeps its
  // block, and so do the updates and optimizer slots); empty: replicated.
  std::function<graph::MeshLayout(const graph::VariableInfo& variable, const std::vector<int>& mesh)> variable_layout;
  // Variables laid out split are gathered whole for each reader but their updates, just before
  // the reader's phase uses them (forward, then again backward), and not kept between: a
  // device holds its blocks of the weights, gradients and slots (ZeRO stage 3, FSDP).
  bool gather_variables_for_use = false;
  // Gradients summed across devices travel in buckets of about this many bytes, each started as
  // soon as backward has produced its last gradient.
  std::size_t bucket_bytes = 25u << 20;
  bool all_reduce_bf16 = false;
  // A step runs the graph once per micro-batch (compile/plan.h); `in_flight` of them are between
  // forward and backward at once on each device: 1 (accumulation) or all (GPipe) unless
  // `schedule` orders the actions otherwise (1F1B), per device.
  int micro_batches = 1;
  std::function<int(int device)> in_flight;  // empty: 1
  std::function<std::vector<Action>(const Program&, int device)> schedule;  // empty: run_all_blocks
  // The programs this process runs, for a strategy over the devices of several processes:
  // [first_program, first_program + program_count) of `devices`; -1: all. The others are lowered
  // (the communication is numbered over all of them) but not made; the plan's programs and fetch
  // sites count the kept ones from 0, and each fetch site says its programs' places among all.
  int first_program = 0;
  int program_count = -1;
};

// A strategy is a description of its lowering: these options (distribute/strategy.h). This is
// the only entry to the lowering pass.
Plan lower(const graph::Graph& g, const std::vector<graph::Value>& fetches, const LoweringOptions& options);

}  // namespace tandem::compile
