// Memory per device, read from the lowered programs of the last training step compiled: what the
// runtime allocates for them, before or after the step runs.
#include <set>

#include "model/model_impl.h"
#include "runtime/executable.h"

namespace tandem {

std::vector<DeviceMemory> Model::memory_per_device() const {
  const CompiledStep* step = impl_->last_train;
  if (!step) return {};
  std::set<int> optimizer_ids;
  for (const VariablePtr& v : impl_->optimizer->variables()) optimizer_ids.insert(v->id());
  const compile::Plan& plan = step->exe->plan();
  std::vector<DeviceMemory> out;
  for (int p = 0; p < step->exe->programs(); ++p) {
    const compile::Program& program = plan.programs[static_cast<std::size_t>(p)];
    DeviceMemory m{.device = program.device, .arena = step->exe->arena_bytes(p)};
    for (const graph::VariableInfo& v : program.graph.variables()) {
      if (program.graph.variable_node(v.id) < 0) continue;  // the device never reads it: no home there
      std::size_t bytes = v.type.bytes();
      if (auto s = program.shards.find(v.id); s != program.shards.end())
        for (const compile::VariableShard::Cut& c : s->second.cuts)
          bytes = bytes / static_cast<std::size_t>(v.type.shape[c.axis]) * static_cast<std::size_t>(c.extent);
      (optimizer_ids.count(v.id) ? m.optimizer_state : m.weights) += bytes;
    }
    out.push_back(m);
  }
  return out;
}

}  // namespace tandem
