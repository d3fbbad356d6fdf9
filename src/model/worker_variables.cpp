// Completing each worker's host tensors from the others', under a strategy that spreads the
// variables over the devices of several workers (a pipeline's stages on different workers, a
// model split or mesh across them): after host_view's copies from this worker's devices, every
// variable is taken whole from the first worker that holds it whole, or block by block from the
// workers that hold its blocks — in one order on every worker, as their collectives need.
#include "distribute/strategy.h"
#include "model/model_impl.h"
#include "tandem/errors.h"

namespace tandem {

void Model::Impl::share_over_workers() {
  const std::vector<VariablePtr> vars = all_variables();
  const int workers = strategy->workers(), me = distribute::this_worker().rank;
  enum : int { kNothing = 0, kBlocks = 1, kWhole = 2 };
  std::vector<double> held(vars.size() * static_cast<std::size_t>(workers), kNothing);
  for (std::size_t i = 0; i < vars.size(); ++i)
    held[i * static_cast<std::size_t>(workers) + static_cast<std::size_t>(me)] =
        homes.holds_whole(*vars[i]) ? kWhole : homes.blocks_held(*vars[i]).empty() ? kNothing : kBlocks;
  strategy->sum_over_workers(held);
  for (std::size_t i = 0; i < vars.size(); ++i) {
    Tensor& value = vars[i]->value();
    auto holds = [&](int w) { return static_cast<int>(held[i * static_cast<std::size_t>(workers) + static_cast<std::size_t>(w)]); };
    int whole = 0;
    while (whole < workers && holds(whole) != kWhole) ++whole;
    if (whole < workers) {
      strategy->from_worker(whole, value.raw(), value.bytes());
      continue;
    }
    for (int w = 0; w < workers; ++w) {  // each holder's blocks, with where they lie
      if (holds(w) != kBlocks) continue;
      std::vector<int64_t> where;  // (axis, offset, extent) of each block
      if (w == me)
        for (const compile::VariableShard& s : homes.blocks_held(*vars[i])) where.insert(where.end(), {s.axis, s.offset, s.extent});
      int64_t count = static_cast<int64_t>(where.size());
      strategy->from_worker(w, &count, sizeof count);
      where.resize(static_cast<std::size_t>(count));
      strategy->from_worker(w, where.data(), where.size() * sizeof(int64_t));
      Tensor theirs = value.clone();
      strategy->from_worker(w, theirs.raw(), theirs.bytes());
      if (w == me) continue;
      for (std::size_t b = 0; b + 2 < where.size(); b += 3)
        runtime::VariableHomes::copy_block(theirs, {static_cast<int>(where[b]), where[b + 1], where[b + 2]}, value);
    }
  }
}

}  // namespace tandem
