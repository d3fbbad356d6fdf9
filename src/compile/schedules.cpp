// The orders in which a device runs its actions (block, micro-batch) in a step.
#include <algorithm>

#include "compile/plan.h"
#include "tandem/errors.h"

namespace tandem::compile {

std::vector<Action> run_all_blocks(const Program& p) {
  const int m = p.micro_batches(), in_flight = p.memory.in_flight;
  const auto blocks = static_cast<int>(p.blocks.size());
  std::vector<Action> actions;
  auto add = [&](auto keep, int micro) {
    for (int b = 0; b < blocks; ++b)
      if (keep(p.blocks[static_cast<std::size_t>(b)])) actions.push_back({b, micro});
  };
  auto forward = [](const Block& b) { return b.per_micro_batch() && b.phase != graph::Phase::Backward; };
  auto backward = [](const Block& b) { return b.phase == graph::Phase::Backward; };
  auto per_micro = [](const Block& b) { return b.per_micro_batch(); };
  auto update = [](const Block& b) { return !b.per_micro_batch(); };
  if (m == 1 || in_flight == 1) {
    for (int j = 0; j < m; ++j) add(per_micro, j);
  } else if (in_flight == m) {
    // Every forward block must come before every backward one, or the reordering would break
    // a dependency.
    for (int b = 1; b < blocks; ++b)
      if (backward(p.blocks[static_cast<std::size_t>(b - 1)]) && forward(p.blocks[static_cast<std::size_t>(b)]))
        throw Error("internal: " + p.device + "'s blocks interleave forward and backward; all micro-batches cannot be in flight");
    for (int j = 0; j < m; ++j) add(forward, j);
    for (int j = 0; j < m; ++j) add(backward, j);
  } else {
    throw Error("internal: a schedule for " + std::to_string(in_flight) + " of " + std::to_string(m) + " micro-batches in flight");
  }
  add(update, m - 1);
  return actions;
}

std::vector<Action> one_forward_one_backward(const Program& p, int warmup) {
  const int m = p.micro_batches();
  std::vector<Action> actions;
  auto add = [&](bool backward, int micro) {
    for (std::size_t b = 0; b < p.blocks.size(); ++b) {
      const Block& block = p.blocks[b];
      if (block.per_micro_batch() && (block.phase == graph::Phase::Backward) == backward)
        actions.push_back({static_cast<int>(b), micro});
    }
  };
  warmup = std::min(warmup, m);
  for (int j = 0; j < warmup; ++j) add(false, j);
  for (int j = 0; j < m; ++j) {
    if (warmup + j < m) add(false, warmup + j);
    add(true, j);
  }
  for (std::size_t b = 0; b < p.blocks.size(); ++b)
    if (!p.blocks[b].per_micro_batch()) actions.push_back({static_cast<int>(b), m - 1});
  return actions;
}

std::vector<Action> interleaved_one_forward_one_backward(const Program& p, int stages, int device, int chunks) {
  const int m = p.micro_batches(), total = m * chunks, group = stages * chunks;
  if (m % stages != 0)
    throw Error("internal: interleaved 1F1B over " + std::to_string(stages) + " stages needs a multiple of them as micro-batches, got " +
                std::to_string(m));
  std::vector<Action> actions;
  // The k-th forward (or backward) of the device: chunk and micro-batch, as Megatron numbers them.
  auto add = [&](int k, bool forward) {
    const int up = (k % group) / stages, local = forward ? up : chunks - 1 - up;
    const int micro = (k / group) * stages + k % stages;
    for (std::size_t b = 0; b < p.blocks.size(); ++b) {
      const Block& block = p.blocks[b];
      if (block.per_micro_batch() && (block.phase == graph::Phase::Backward) != forward && block.stage / stages == local)
        actions.push_back({static_cast<int>(b), micro});
    }
  };
  const int warmup = std::min(total, (stages - device - 1) * 2 + (chunks - 1) * stages);
  for (int k = 0; k < warmup; ++k) add(k, true);
  for (int k = 0; k < total - warmup; ++k) {
    add(warmup + k, true);
    add(k, false);
  }
  for (int k = total - warmup; k < total; ++k) add(k, false);
  for (std::size_t b = 0; b < p.blocks.size(); ++b)
    if (!p.blocks[b].per_micro_batch()) actions.push_back({static_cast<int>(b), m - 1});
  return actions;
}

}  // namespace tandem::compile
