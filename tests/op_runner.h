// Runs a graph's values once on one device from host tensors of any dtype (fed by placeholder
// name) and returns them as host tensors: for op tests whose inputs or outputs are not float64.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <tandem/tensor.h>

#include "backend/device.h"
#include "distribute/strategy.h"
#include "graph/graph.h"
#include "runtime/executable.h"
#include "lower_with.h"

namespace op_runner {

inline std::vector<tandem::Tensor> run(const tandem::graph::Graph& g, const std::vector<std::pair<std::string, tandem::Tensor>>& feeds,
                                       const std::vector<tandem::graph::Value>& fetches, const std::string& device = "cpu:0") {
  const auto plan = std::make_shared<const tandem::compile::Plan>(lower_with(tandem::distribute::Default(), g, fetches));
  tandem::runtime::Executable exe(plan, std::vector<tandem::backend::Device*>{&tandem::backend::open_device(device)},
                                  [](int, int) -> void* { return nullptr; });
  for (const auto& [name, t] : feeds)
    if (void* p = exe.feed(0, name)) exe.device(0).copy_in(p, t.raw(), t.bytes());
  exe.run();
  std::vector<tandem::Tensor> out;
  for (std::size_t f = 0; f < fetches.size(); ++f) {
    out.emplace_back(g.type(fetches[f]).shape, g.type(fetches[f]).dtype);
    exe.copy_fetch(0, static_cast<int>(f), out.back().raw(), out.back().bytes());
  }
  return out;
}

}  // namespace op_runner
