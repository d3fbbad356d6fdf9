#include <algorithm>

#include "compile/plan.h"
#include "graph/op_registry.h"
#include "tandem/errors.h"

namespace tandem::compile {

namespace {
constexpr std::size_t kAlignment = 64;  // a cache line; also what AVX-512 loads like
using Region = MemoryPlan::Region;

std::size_t align(std::size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }
std::size_t at(int i) { return static_cast<std::size_t>(i); }

struct Buffer {
  std::size_t bytes = 0;
  int first = 0, last = 0;  // positions in the order during which the buffer is live
  int producer = -1;
  bool fetched = false;
  std::size_t offset = 0;
  Region region = Region::Step;
};

// Every buffer the order needs, and which one each value uses (-1: a variable or a view of one).
struct Buffers {
  std::vector<std::vector<int>> of;  // [node][output]
  std::vector<Buffer> list;
};

Buffers collect(const graph::Graph& g, const std::vector<int>& order, const std::vector<graph::Value>& fetches) {
  Buffers b;
  b.of.resize(at(g.size()));
  const int end = static_cast<int>(order.size());
  for (int p = 0; p < end; ++p) {
    const int id = order[at(p)];
    const graph::Node& n = g.node(id);
    auto& mine = b.of[at(id)];
    for (std::size_t o = 0; o < n.outputs.size(); ++o) {
      if (n.def->source == ops::Source::Variable) {
        mine.push_back(-1);
      } else if (n.def->outputs_alias_inputs) {  // a view or an in-place result
        const graph::Value in = n.inputs[o];
        mine.push_back(b.of[at(in.node)][at(in.index)]);
      } else {
        mine.push_back(static_cast<int>(b.list.size()));
        b.list.push_back({align(n.outputs[o].bytes()), p, p, id, false, 0, Region::Step});
      }
    }
    for (graph::Value in : n.inputs) {
      const int buf = b.of[at(in.node)][at(in.index)];
      if (buf >= 0) b.list[at(buf)].last = std::max(b.list[at(buf)].last, p);
    }
  }
  for (graph::Value f : fetches) {
    if (!f.valid()) continue;
    const int buf = b.of[at(f.node)][at(f.index)];
    if (buf >= 0) b.list[at(buf)].last = end, b.list[at(buf)].fetched = true;
  }
  // Placeholders are written before the step starts: live from the beginning.
  for (int id : order)
    if (g.node(id).def->source == ops::Source::Feed) b.list[at(b.of[at(id)][0])].first = -1;
  return b;
}

struct Unit {
  std::size_t bytes = 0;
  int first = 0, last = 0;
  std::vector<int> members;
  std::size_t offset = 0;
};

// Inputs of a node that asks for them contiguously (a gradient bucket's all-reduce) become one
// allocation unit, laid out back to back in input order; every other buffer is a unit alone.
std::vector<Unit> units_of(const graph::Graph& g, const std::vector<int>& order, const Buffers& b) {
  const int end = static_cast<int>(order.size());
  std::vector<Unit> units;
  std::vector<int> unit_of(b.list.size(), -1);
  for (int id : order) {
    const graph::Node& n = g.node(id);
    if (!n.def->contiguous_inputs) continue;
    Unit u{0, end, -1, {}, 0};
    for (graph::Value in : n.inputs) {
      const int buf = b.of[at(in.node)][at(in.index)];
      if (buf < 0 || unit_of[at(buf)] >= 0) continue;  // external, or already grouped
      unit_of[at(buf)] = static_cast<int>(units.size());
      u.members.push_back(buf);
    }
    if (!u.members.empty()) units.push_back(std::move(u));
  }
  for (std::size_t buf = 0; buf < b.list.size(); ++buf)
    if (unit_of[buf] < 0) units.push_back({0, end, -1, {static_cast<int>(buf)}, 0});
  for (Unit& u : units)
    for (int m : u.members) {
      u.bytes += b.list[at(m)].bytes;
      u.first = std::min(u.first, b.list[at(m)].first);
      u.last = std::max(u.last, b.list[at(m)].last);
    }
  return units;
}

// Greedy by size: each unit takes the lowest offset that no time-overlapping unit uses. Sets the
// members' offsets; returns the bytes the units need.
std::size_t pack(std::vector<Unit*> units, Buffers& b) {
  std::stable_sort(units.begin(), units.end(), [](const Unit* x, const Unit* y) { return x->bytes > y->bytes; });
  std::size_t total = 0;
  std::vector<const Unit*> placed;
  for (Unit* u : units) {
    std::vector<std::pair<std::size_t, std::size_t>> taken;
    for (const Unit* o : placed)
      if (o->first <= u->last && u->first <= o->last) taken.emplace_back(o->offset, o->offset + o->bytes);
    std::sort(taken.begin(), taken.end());
    std::size_t offset = 0;
    for (auto [lo, hi] : taken) {
      if (offset + u->bytes <= lo) break;
      offset = std::max(offset, hi);
    }
    u->offset = offset;
    total = std::max(total, offset + u->bytes);
    placed.push_back(u);
    for (int m : u->members) {
      b.list[at(m)].offset = offset;
      offset += b.list[at(m)].bytes;
    }
  }
  return total;
}

MemoryPlan offsets_of(const graph::Graph& g, const std::vector<int>& order, const Buffers& b) {
  MemoryPlan plan;
  plan.offsets.resize(at(g.size()));
  plan.regions.resize(at(g.size()));
  for (int id : order)
    for (int buf : b.of[at(id)]) {
      plan.offsets[at(id)].push_back(buf < 0 ? MemoryPlan::kExternal : static_cast<int64_t>(b.list[at(buf)].offset));
      plan.regions[at(id)].push_back(buf < 0 ? Region::Step : b.list[at(buf)].region);
    }
  return plan;
}

std::vector<int> order_of(const std::vector<Block>& blocks) {
  std::vector<int> order;
  for (const Block& block : blocks) order.insert(order.end(), block.nodes.begin(), block.nodes.end());
  return order;
}
}  // namespace

int64_t MemoryPlan::address(int node, int output, int micro_batch) const {
  const int64_t off = offsets[at(node)][at(output)];
  if (off == kExternal) return kExternal;
  const auto s = static_cast<int64_t>(step_bytes), a = static_cast<int64_t>(action_bytes);
  const auto f = static_cast<int64_t>(feed_bytes), sl = static_cast<int64_t>(slot_bytes);
  switch (regions[at(node)][at(output)]) {
    case Region::Step: return off;
    case Region::Action: return s + off;
    case Region::Feed: return s + a + micro_batch * f + off;
    case Region::Slot: return s + a + micro_batches * f + (micro_batch % in_flight) * sl + off;
  }
  return off;
}

MemoryPlan plan_memory(const graph::Graph& g, const std::vector<int>& order, const std::vector<graph::Value>& fetches) {
  Buffers b = collect(g, order, fetches);
  std::vector<Unit> units = units_of(g, order, b);
  std::vector<Unit*> all;
  for (Unit& u : units) all.push_back(&u);
  const std::size_t bytes = pack(all, b);
  MemoryPlan plan = offsets_of(g, order, b);
  plan.arena_bytes = plan.step_bytes = bytes;
  return plan;
}

std::vector<bool> once_per_step_nodes(const graph::Graph& g, const std::vector<Block>& blocks) {
  std::vector<bool> sum_level(at(g.size()), false), once(at(g.size()), false);
  for (const Block& block : blocks)
    for (int id : block.nodes) {
      const graph::Node& n = g.node(id);
      bool reads_sums = false;
      for (graph::Value in : n.inputs) reads_sums = reads_sums || sum_level[at(in.node)];
      for (int a : n.after) reads_sums = reads_sums || (sum_level[at(a)] && g.node(a).op != "micro_sum");
      sum_level[at(id)] = n.op == "micro_sum" || reads_sums;
      once[at(id)] = block.per_micro_batch() && reads_sums;
    }
  return once;
}

MemoryPlan plan_micro_batched_memory(const graph::Graph& g, const std::vector<Block>& blocks, const std::vector<graph::Value>& fetches,
                                     const std::vector<bool>& once_per_step, int micro_batches, int in_flight) {
  const std::vector<int> order = order_of(blocks);
  Buffers b = collect(g, order, fetches);
  std::vector<int> block_at;  // block index of each position in the order
  for (std::size_t k = 0; k < blocks.size(); ++k) block_at.insert(block_at.end(), blocks[k].nodes.size(), static_cast<int>(k));
  for (Buffer& buf : b.list) {
    const graph::Node& n = g.node(buf.producer);
    const bool sum = n.op == "micro_sum";
    if (sum || once_per_step[at(buf.producer)] || n.phase == graph::Phase::Update) {
      buf.region = Region::Step;
      if (sum) buf.first = -1;  // written by every micro-batch of the step
    } else if (n.def->source == ops::Source::Feed) {
      buf.region = Region::Feed;
    } else if (buf.fetched) {
      throw Error("internal: a step of " + std::to_string(micro_batches) + " micro-batches fetches '" + n.op +
                  "' of one micro-batch; fetch its micro_sum");
    } else {
      const bool one_block = buf.last < static_cast<int>(order.size()) && block_at[at(buf.first)] == block_at[at(buf.last)];
      buf.region = one_block ? Region::Action : Region::Slot;
    }
  }
  std::vector<Unit> units = units_of(g, order, b);
  MemoryPlan sizes;
  for (Region r : {Region::Step, Region::Action, Region::Feed, Region::Slot}) {
    std::vector<Unit*> mine;
    for (Unit& u : units) {
      const Region ur = b.list[at(u.members[0])].region;
      for (int m : u.members)
        if (b.list[at(m)].region != ur) throw Error("internal: a contiguous group of buffers spans memory regions");
      if (ur == r) mine.push_back(&u);
    }
    const std::size_t bytes = pack(mine, b);
    (r == Region::Step ? sizes.step_bytes : r == Region::Action ? sizes.action_bytes : r == Region::Feed ? sizes.feed_bytes : sizes.slot_bytes) = bytes;
  }
  MemoryPlan plan = offsets_of(g, order, b);
  plan.step_bytes = sizes.step_bytes;
  plan.action_bytes = sizes.action_bytes;
  plan.feed_bytes = sizes.feed_bytes;
  plan.slot_bytes = sizes.slot_bytes;
  plan.micro_batches = micro_batches;
  plan.in_flight = in_flight;
  plan.arena_bytes = plan.step_bytes + plan.action_bytes + static_cast<std::size_t>(micro_batches) * plan.feed_bytes +
                     static_cast<std::size_t>(in_flight) * plan.slot_bytes;
  return plan;
}

}  // namespace tandem::compile
