// Which pipeline stage each layer of a step's graph belongs to: at named boundaries, or where the
// estimated costs balance.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tandem::distribute {

struct LayerCost {
  std::string layer;  // its scope in the graph
  double cost = 0;    // FLOPs of forward and backward, or bytes of parameters
};

// The model's layers in the order their forward nodes appear, with an estimate of the work of
// their forward and backward nodes that run (those the updates, loss and metrics need): 2·M·N·K
// for products and convolutions, one per element written for everything else.
std::vector<LayerCost> layer_costs(const graph::Graph& g);

// The same layers with the bytes of the variables they read first (their weights).
std::vector<LayerCost> parameter_bytes(const graph::Graph& g);

// "12.5%" for 0.125.
std::string percent(double fraction);

// Contiguous runs of `costs` into `stages` groups minimising the largest group's cost; returns
// the index of each group's first layer.
std::vector<std::size_t> balanced_cuts(const std::vector<LayerCost>& costs, int stages);

// Contiguous runs of `costs` into `chunks` groups, group k on device k mod `devices` (the
// interleaved schedule's chunks), minimising the busiest device's summed cost; returns the index of
// each group's first layer. With as many devices as chunks, balanced_cuts.
std::vector<std::size_t> interleaved_cuts(const std::vector<LayerCost>& costs, int chunks, int devices);

// Layer scope -> stage (or chunk). `boundaries` name the first layer of stages 1, 2, ...; empty:
// balanced over `devices` (0: one per stage), stage k on device k mod devices.
std::map<std::string, int> assign_stages(const graph::Graph& g, const std::vector<std::string>& boundaries, int stages, int devices = 0);

}  // namespace tandem::distribute
