#include <algorithm>

#include "compile/plan.h"
#include "graph/op_registry.h"

namespace tandem::compile {

namespace {
constexpr std::size_t kAlignment = 64;  // a cache line; also what AVX-512 loads like

std::size_t align(std::size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

struct Buffer {
  std::size_t bytes = 0;
  int first = 0, last = 0;  // positions in the order during which the buffer is live
  std::size_t offset = 0;
};
}  // namespace

MemoryPlan plan_memory(const graph::Graph& g, const std::vector<int>& order, const std::vector<graph::Value>& fetches) {
  MemoryPlan plan;
  plan.offsets.resize(static_cast<std::size_t>(g.size()));
  // Each value maps to a buffer; -1 = external (a variable, or a view of one).
  std::vector<std::vector<int>> buffer_of(static_cast<std::size_t>(g.size()));
  std::vector<Buffer> buffers;
  const int end = static_cast<int>(order.size());
  for (int p = 0; p < end; ++p) {
    const int id = order[static_cast<std::size_t>(p)];
    const graph::Node& n = g.node(id);
    auto& mine = buffer_of[static_cast<std::size_t>(id)];
    for (std::size_t o = 0; o < n.outputs.size(); ++o) {
      if (n.def->source == ops::Source::Variable) {
        mine.push_back(-1);
      } else if (n.def->outputs_alias_inputs) {  // a view or an in-place result
        const graph::Value in = n.inputs[o];
        mine.push_back(buffer_of[static_cast<std::size_t>(in.node)][static_cast<std::size_t>(in.index)]);
      } else {
        mine.push_back(static_cast<int>(buffers.size()));
        buffers.push_back({align(n.outputs[o].bytes()), p, p, 0});
      }
    }
    for (graph::Value in : n.inputs) {
      const int b = buffer_of[static_cast<std::size_t>(in.node)][static_cast<std::size_t>(in.index)];
      if (b >= 0) buffers[static_cast<std::size_t>(b)].last = std::max(buffers[static_cast<std::size_t>(b)].last, p);
    }
  }
  for (graph::Value f : fetches) {
    if (!f.valid()) continue;
    const int b = buffer_of[static_cast<std::size_t>(f.node)][static_cast<std::size_t>(f.index)];
    if (b >= 0) buffers[static_cast<std::size_t>(b)].last = end;
  }
  // Placeholders are written before the step starts: live from the beginning.
  for (int id : order)
    if (g.node(id).def->source == ops::Source::Feed)
      buffers[static_cast<std::size_t>(buffer_of[static_cast<std::size_t>(id)][0])].first = -1;

  // Inputs of a node that asks for them contiguously (a gradient bucket's all-reduce) become one
  // allocation unit, laid out back to back in input order.
  struct Unit {
    std::size_t bytes = 0;
    int first = 0, last = 0;
    std::vector<int> members;
    std::size_t offset = 0;
  };
  std::vector<Unit> units;
  std::vector<int> unit_of(buffers.size(), -1);
  for (int id : order) {
    const graph::Node& n = g.node(id);
    if (!n.def->contiguous_inputs) continue;
    Unit u{0, end, -1, {}, 0};
    for (graph::Value in : n.inputs) {
      const int b = buffer_of[static_cast<std::size_t>(in.node)][static_cast<std::size_t>(in.index)];
      if (b < 0 || unit_of[static_cast<std::size_t>(b)] >= 0) continue;  // external, or already grouped
      unit_of[static_cast<std::size_t>(b)] = static_cast<int>(units.size());
      u.members.push_back(b);
    }
    if (u.members.empty()) continue;
    units.push_back(std::move(u));
  }
  for (std::size_t b = 0; b < buffers.size(); ++b)
    if (unit_of[b] < 0) {
      unit_of[b] = static_cast<int>(units.size());
      units.push_back({0, end, -1, {static_cast<int>(b)}, 0});
    }
  for (Unit& u : units)
    for (int b : u.members) {
      const Buffer& buf = buffers[static_cast<std::size_t>(b)];
      u.bytes += buf.bytes;
      u.first = std::min(u.first, buf.first);
      u.last = std::max(u.last, buf.last);
    }

  // Greedy by size: each unit takes the lowest offset that no time-overlapping unit uses.
  std::vector<int> by_size(units.size());
  for (std::size_t i = 0; i < units.size(); ++i) by_size[i] = static_cast<int>(i);
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](int a, int b) { return units[static_cast<std::size_t>(a)].bytes > units[static_cast<std::size_t>(b)].bytes; });
  std::vector<int> placed;
  for (int ui : by_size) {
    Unit& u = units[static_cast<std::size_t>(ui)];
    std::vector<std::pair<std::size_t, std::size_t>> taken;
    for (int pi : placed) {
      const Unit& o = units[static_cast<std::size_t>(pi)];
      if (o.first <= u.last && u.first <= o.last) taken.emplace_back(o.offset, o.offset + o.bytes);
    }
    std::sort(taken.begin(), taken.end());
    std::size_t offset = 0;
    for (auto [lo, hi] : taken) {
      if (offset + u.bytes <= lo) break;
      offset = std::max(offset, hi);
    }
    u.offset = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + u.bytes);
    placed.push_back(ui);
    for (int b : u.members) {
      buffers[static_cast<std::size_t>(b)].offset = offset;
      offset += buffers[static_cast<std::size_t>(b)].bytes;
    }
  }

  for (int id : order) {
    auto& offs = plan.offsets[static_cast<std::size_t>(id)];
    for (int b : buffer_of[static_cast<std::size_t>(id)])
      offs.push_back(b < 0 ? MemoryPlan::kExternal : static_cast<int64_t>(buffers[static_cast<std::size_t>(b)].offset));
  }
  return plan;
}

}  // namespace tandem::compile
