#include "runtime/executable.h"

#include <cstdlib>
#include <cstring>

#include "tandem/errors.h"

namespace tandem::runtime {

Executable::Executable(std::shared_ptr<const compile::Plan> plan, const std::function<void*(int)>& context,
                       const std::function<void*(int, int)>& variable)
    : plan_(std::move(plan)) {
  for (std::size_t p = 0; p < plan_->programs.size(); ++p) {
    const compile::Program& prog = plan_->programs[p];
    const graph::Graph& g = prog.graph;
    Bound b;
    const std::size_t bytes = std::max<std::size_t>(64, prog.memory.arena_bytes);
    b.arena = {static_cast<std::byte*>(std::aligned_alloc(64, bytes)), std::free};
    if (!b.arena) throw Error("cannot allocate a " + std::to_string(bytes) + "-byte arena for " + prog.device);
    std::memset(b.arena.get(), 0, bytes);  // touch every page now, not in the first step
    b.pointers.resize(static_cast<std::size_t>(g.size()));
    void* ctx = context(static_cast<int>(p));
    for (const compile::Block& block : prog.blocks) {
      for (int id : block.nodes) {
        const graph::Node& n = g.node(id);
        auto& ptrs = b.pointers[static_cast<std::size_t>(id)];
        for (std::size_t o = 0; o < n.outputs.size(); ++o) {
          const int64_t off = prog.memory.offsets[static_cast<std::size_t>(id)][o];
          if (n.op == "variable") ptrs.push_back(variable(static_cast<int>(p), static_cast<int>(n.attrs.i("var"))));
          else if (off == compile::MemoryPlan::kExternal) ptrs.push_back(b.pointers[static_cast<std::size_t>(n.inputs[0].node)][static_cast<std::size_t>(n.inputs[0].index)]);
          else ptrs.push_back(b.arena.get() + off);
        }
      }
    }
    for (const compile::Block& block : prog.blocks) {
      std::vector<backend::KernelFn> fns;
      for (int id : block.nodes) {
        const graph::Node& n = g.node(id);
        if (n.op == "placeholder" || n.op == "variable") continue;
        backend::KernelInit init{n, {}, {}, b.pointers[static_cast<std::size_t>(id)], ctx};
        for (graph::Value in : n.inputs) {
          init.in_types.push_back(g.type(in));
          init.in.push_back(b.pointers[static_cast<std::size_t>(in.node)][static_cast<std::size_t>(in.index)]);
        }
        const auto& factory = backend::find_kernel(n.op, backend::DeviceKind::Cpu, backend::kernel_dtype(g, n));
        if (auto fn = factory(init)) fns.push_back(std::move(fn));
      }
      b.blocks.push_back(std::move(fns));
    }
    bound_.push_back(std::move(b));
  }
}

void* Executable::feed(int program, const std::string& name) const {
  const graph::Graph& g = plan_->programs[static_cast<std::size_t>(program)].graph;
  for (int i = 0; i < g.size(); ++i)
    if (g.node(i).op == "placeholder" && g.node(i).attrs.s("name") == name) {
      const auto& ptrs = bound_[static_cast<std::size_t>(program)].pointers[static_cast<std::size_t>(i)];
      if (ptrs.empty()) return nullptr;  // the step does not read this input
      return ptrs[0];
    }
  return nullptr;
}

const void* Executable::fetch(int program, int index) const {
  const compile::Program& prog = plan_->programs[static_cast<std::size_t>(program)];
  const graph::Value v = prog.fetches[static_cast<std::size_t>(index)];
  return bound_[static_cast<std::size_t>(program)].pointers[static_cast<std::size_t>(v.node)][static_cast<std::size_t>(v.index)];
}

std::size_t Executable::arena_bytes(int program) const { return plan_->programs[static_cast<std::size_t>(program)].memory.arena_bytes; }

void Executable::run_block(int program, int block) {
  for (auto& fn : bound_[static_cast<std::size_t>(program)].blocks[static_cast<std::size_t>(block)]) fn();
}

void Executable::run() {
  for (std::size_t p = 0; p < plan_->schedule.size(); ++p)
    for (const compile::Action& a : plan_->schedule[p]) run_block(static_cast<int>(p), a.block);
}

}  // namespace tandem::runtime
