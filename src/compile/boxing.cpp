#include "compile/boxing.h"

#include <algorithm>

#include "ops/attention.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::compile {

namespace {
using graph::Layout;
using graph::Value;

std::size_t at(int i) { return static_cast<std::size_t>(i); }

// The graph of device d, ready for boxing nodes of `phase` in pipeline chunk `stage`.
graph::Graph& prepare(std::vector<graph::Graph>& local, int d, graph::Phase phase, int stage) {
  graph::Graph& g = local[at(d)];
  g.scope = "boxing";
  g.role = graph::Role::Layer;
  g.phase = phase;
  g.stage = stage;
  return g;
}

Located like(const Located& v, Layout layout) {
  Located r{v.devices, std::move(layout), std::vector<Value>(v.part.size()), v.type, v.phase, v.stage};
  return r;
}

Value zero_rows(graph::Graph& g, const TensorType& type, int axis, int64_t rows) {
  std::vector<int64_t> dims = type.shape.dims();
  dims[at(axis)] = rows;
  return ops::fill(g, {Shape(std::move(dims)), type.dtype}, 0.0);
}

}  // namespace

Located Boxing::convert(const Located& v, const std::vector<int>& devices, const Layout& want, int stage) {
  if (v.devices == devices) return within(v, want);
  // Between groups of one size (a pipeline's stages over replicas) each part goes to its
  // counterpart: device i of the one group sends its block, or its partial sum, to device i of
  // the other.
  if (v.devices.size() == devices.size()) return within(pairwise(v, devices, stage), want);
  return within(transfer(within(v, Layout::replicated()), devices, stage), want);
}

Located Boxing::within(const Located& v, const Layout& want) {
  using K = Layout::Kind;
  if (v.layout == want) return v;
  if (v.devices.size() == 1) {  // one device holds all of it, whatever it is called
    Located r = v;
    r.layout = want;
    return r;
  }
  const K from = v.layout.kind;
  switch (want.kind) {
    case K::Replicated:
      return from == K::Partial ? all_reduce({v})[0] : gather(v);
    case K::Split:
      if (from == K::Replicated) return slice(v, want);
      if (from == K::Partial) return want.even() && want.axis == 0 ? scatter(v, want) : slice(all_reduce({v})[0], want);
      return slice(gather(v), want);
    case K::Partial:
      break;
  }
  throw Error("internal: no layout rule asks for partial sums of a " + v.layout.str() + " value");
}

std::vector<Located> Boxing::all_reduce(const std::vector<Located>& parts) {
  using K = graph::Communication::Kind;
  graph::Phase phase = parts[0].phase;
  for (const Located& p : parts) phase = std::max(phase, p.phase);
  graph::Communication c{.kind = K::AllReduceStart, .group = parts[0].devices, .bucket = next_bucket_++,
                         .wire = bf16_ ? graph::Communication::Wire::BFloat16 : graph::Communication::Wire::Native};
  std::vector<Located> out;
  for (const Located& p : parts) out.push_back(like(p, Layout::replicated()));
  for (int d : parts[0].devices) {
    graph::Graph& g = prepare(local_, d, phase, parts[0].stage);
    std::vector<Value> in;
    for (const Located& p : parts) in.push_back(p.on(d));
    c.kind = K::AllReduceStart;
    g.communicate(c, in);
    const int start = g.size() - 1;
    c.kind = K::AllReduceWait;
    const std::vector<Value> reduced = g.communicate(c, in);
    g.node(g.size() - 1).after = {start};
    for (std::size_t i = 0; i < parts.size(); ++i) out[i].part[at(d)] = reduced[i];
  }
  return out;
}

Located Boxing::copy(const Located& v) {
  Located r = like(v, v.layout);
  for (int d : v.devices) r.part[at(d)] = ops::scale(prepare(local_, d, v.phase, v.stage), v.on(d), 1.0);
  return r;
}

Located Boxing::pairwise(const Located& v, const std::vector<int>& devices, int stage) {
  Located r{devices, v.layout, std::vector<Value>(v.part.size()), v.type, v.phase, stage};
  const TensorType global = v.type;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const int from = v.devices[i], to = devices[i];
    if (from == to) {
      r.part[at(to)] = v.on(from);
      continue;
    }
    r.part[at(to)] = send(v, from, to, v.layout.local(global, static_cast<int>(i)), stage);
  }
  return r;
}

Located Boxing::transfer(const Located& v, const std::vector<int>& devices, int stage) {
  Located r{devices, Layout::replicated(), std::vector<Value>(v.part.size()), v.type, v.phase, stage};
  const int from = v.devices.front();
  for (int d : devices) {
    if (std::find(v.devices.begin(), v.devices.end(), d) != v.devices.end()) {
      r.part[at(d)] = v.on(d);
      continue;
    }
    r.part[at(d)] = send(v, from, d, v.type, stage);
  }
  return r;
}

Value Boxing::send(const Located& v, int from, int to, const TensorType& part, int stage) {
  using K = graph::Communication::Kind;
  const int tag = next_tag_++;
  prepare(local_, from, v.phase, v.stage).communicate({.kind = K::Send, .peer = to, .tag = tag}, {v.on(from)});
  return prepare(local_, to, v.phase, stage)
      .communicate({.kind = K::Recv, .peer = from, .tag = tag}, {}, {{"shape", part.shape.dims()}, {"dtype", int64_t(part.dtype)}})[0];
}

Located Boxing::slice(const Located& v, const Layout& want) {
  Located r = like(v, want);
  for (std::size_t p = 0; p < v.devices.size(); ++p) {
    const int d = v.devices[p];
    r.part[at(d)] = ops::slice(prepare(local_, d, v.phase, v.stage), v.on(d), want.axis, want.offset(static_cast<int>(p)), want.shares[p]);
  }
  return r;
}

// Every device pads its block to the longest one and all-gathers (which stacks the blocks along
// axis 0); the real parts of the blocks are then laid side by side along the split axis.
Located Boxing::gather(const Located& v) {
  const int axis = v.layout.axis;
  const std::vector<int64_t>& shares = v.layout.shares;
  const int64_t longest = *std::max_element(shares.begin(), shares.end());
  TensorType padded = v.type;
  std::vector<int64_t> dims = padded.shape.dims();
  dims[at(axis)] = longest;
  padded.shape = Shape(dims);
  const int64_t block = padded.shape[0];  // a block's extent along axis 0 after the gather
  Located r = like(v, Layout::replicated());
  for (std::size_t p = 0; p < v.devices.size(); ++p) {
    const int d = v.devices[p];
    graph::Graph& g = prepare(local_, d, v.phase, v.stage);
    Value mine = v.on(d);
    if (shares[p] < longest) mine = ops::concat(g, {mine, zero_rows(g, padded, axis, longest - shares[p])}, axis);
    Value all = g.communicate({.kind = graph::Communication::Kind::AllGather, .group = v.devices}, {mine})[0];
    if (axis != 0 || !v.layout.even()) {
      std::vector<Value> blocks;
      for (std::size_t q = 0; q < shares.size(); ++q) {
        if (shares[q] == 0) continue;
        Value b = ops::slice(g, all, 0, static_cast<int64_t>(q) * block, axis == 0 ? shares[q] : block);
        if (axis != 0 && shares[q] < longest) b = ops::slice(g, b, axis, 0, shares[q]);
        blocks.push_back(b);
      }
      all = ops::concat(g, blocks, axis);
    }
    r.part[at(d)] = all;
  }
  return r;
}

Located Boxing::scatter(const Located& v, const Layout& want) {
  Located r = like(v, want);
  const graph::Communication c{.kind = graph::Communication::Kind::ReduceScatter, .group = v.devices};
  for (int d : v.devices) r.part[at(d)] = prepare(local_, d, v.phase, v.stage).communicate(c, {v.on(d)})[0];
  return r;
}

}  // namespace tandem::compile
