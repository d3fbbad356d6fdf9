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

Located like(const Located& v, graph::MeshLayout layout) {
  return {v.devices, v.mesh, std::move(layout), std::vector<Value>(v.part.size()), v.type, v.phase, v.stage};
}

int split_dim(const Layout& l) { return l.is_split() ? l.axis : -1; }

// The positions (in a mesh of shape `mesh`) at coordinate 0 along every one of `axes`: one per
// sub-group of those axes.
std::vector<int> group_leaders(const std::vector<int>& mesh, const std::vector<int>& axes) {
  int size = 1;
  for (int m : mesh) size *= m;
  std::vector<int> leaders;
  for (int p = 0; p < size; ++p) {
    const std::vector<int> c = graph::mesh_coordinates(p, mesh);
    if (std::all_of(axes.begin(), axes.end(), [&](int a) { return c[at(a)] == 0; })) leaders.push_back(p);
  }
  return leaders;
}

Value zero_rows(graph::Graph& g, const TensorType& type, int axis, int64_t rows) {
  std::vector<int64_t> dims = type.shape.dims();
  dims[at(axis)] = rows;
  return ops::fill(g, {Shape(std::move(dims)), type.dtype}, 0.0);
}

}  // namespace

std::optional<Reduction> reduction(const graph::MeshLayout& have, const graph::MeshLayout& want) {
  Reduction r;
  for (std::size_t a = 0; a < have.axes.size(); ++a) {
    if (have[a] == want[a]) continue;
    if (!have[a].is_partial()) return std::nullopt;
    if (want[a].is_split() && want[a].axis == 0 && want[a].even()) r.scatter = true;
    else if (!want[a].is_replicated()) return std::nullopt;
    r.axes.push_back(static_cast<int>(a));
  }
  if (r.axes.empty() || (r.scatter && r.axes.size() > 1)) return std::nullopt;
  if (r.scatter)  // the rows a device keeps are contiguous only where no other axis cuts them
    for (std::size_t a = 0; a < want.axes.size(); ++a)
      if (static_cast<int>(a) != r.axes[0] && want[a].is_split() && want[a].axis == 0) return std::nullopt;
  return r;
}

Located Boxing::convert(const Located& v, const std::vector<int>& devices, const std::vector<int>& mesh, const graph::MeshLayout& want,
                         int stage) {
  if (v.devices == devices && v.mesh == mesh) return within(v, want);
  // Between meshes of one shape (a pipeline's stages over replicas) each part goes to its
  // counterpart: device i of the one mesh sends its block, or its partial sum, to device i of
  // the other.
  if (v.mesh == mesh) return within(pairwise(v, devices, stage), want);
  Located whole = transfer(within(v, graph::MeshLayout::replicated(v.mesh.size())), devices, stage);
  whole.mesh = mesh;
  whole.layout = graph::MeshLayout::replicated(mesh.size());
  return within(whole, want);
}

// Axis by axis. An axis whose split moves (its own entry changes, or an outer axis changes how
// the dimension it cuts is cut) is first made whole, inner axes first, and cut again afterwards,
// outer axes first; an axis whose change moves no block of another changes in one step.
Located Boxing::within(const Located& v, const graph::MeshLayout& want) {
  if (v.layout == want) return v;
  if (v.devices.size() == 1) {  // one device holds all of it, whatever it is called
    Located r = v;
    r.layout = want;
    return r;
  }
  Located cur = v;
  const int n = static_cast<int>(v.mesh.size());
  std::vector<int> summed;  // partial sums over several axes, wanted whole: one all-reduce
  for (int a = 0; a < n; ++a)
    if (cur.layout[at(a)].is_partial() && want[at(a)].is_replicated()) summed.push_back(a);
  if (summed.size() > 1) cur = all_reduce({cur}, summed)[0];
  const graph::MeshLayout start = cur.layout;
  // moved_before[a]: the dimensions whose blocks an axis before a moves.
  std::vector<std::vector<int>> moved_before(at(n));
  std::vector<bool> remade(at(n), false);
  std::vector<int> moved;
  auto in = [](const std::vector<int>& dims, int d) { return d >= 0 && std::find(dims.begin(), dims.end(), d) != dims.end(); };
  for (int a = 0; a < n; ++a) {
    moved_before[at(a)] = moved;
    remade[at(a)] = in(moved, split_dim(start[at(a)]));
    if (remade[at(a)] || start[at(a)] != want[at(a)]) {
      moved.push_back(split_dim(start[at(a)]));
      moved.push_back(split_dim(want[at(a)]));
    }
  }
  for (int a = n - 1; a >= 0; --a) {
    if (remade[at(a)]) cur = along(cur, a, Layout::replicated());
    else if (start[at(a)] != want[at(a)])
      cur = along(cur, a, in(moved_before[at(a)], split_dim(want[at(a)])) ? Layout::replicated() : want[at(a)]);
  }
  for (int a = 0; a < n; ++a)
    if (cur.layout[at(a)] != want[at(a)]) cur = along(cur, a, want[at(a)]);
  return cur;
}

Located Boxing::along(const Located& v, int axis, const Layout& want) {
  if (v.mesh.size() == 1) {
    Located r = within(v, want);
    r.layout = graph::MeshLayout(want);
    return r;
  }
  Located r = v;
  r.layout.axes[at(axis)] = want;
  for (int p : group_leaders(v.mesh, {axis})) {
    const Located done = within(group(v, {axis}, p), want);
    for (int d : done.devices) r.part[at(d)] = done.part[at(d)];
  }
  return r;
}

Located Boxing::group(const Located& v, const std::vector<int>& axes, int position) const {
  const std::vector<int> here = graph::mesh_coordinates(position, v.mesh);
  graph::MeshLayout others = v.layout;
  Located g = v;
  g.devices.clear();
  for (int a : axes) others.axes[at(a)] = Layout::replicated();
  for (std::size_t q = 0; q < v.devices.size(); ++q) {
    const std::vector<int> c = graph::mesh_coordinates(static_cast<int>(q), v.mesh);
    bool same = true;
    for (std::size_t a = 0; a < c.size() && same; ++a)
      same = c[a] == here[a] || std::find(axes.begin(), axes.end(), static_cast<int>(a)) != axes.end();
    if (same) g.devices.push_back(v.devices[q]);
  }
  g.mesh = {static_cast<int>(g.devices.size())};
  g.layout = axes.size() == 1 ? v.layout[at(axes[0])] : Layout::partial();
  g.type = others.local(v.type, here);
  return g;
}

std::vector<Located> Boxing::all_reduce(const std::vector<Located>& parts, const std::vector<int>& axes) {
  std::vector<Located> out = parts;
  for (Located& o : out)
    for (int a : axes) o.layout.axes[at(a)] = Layout::replicated();
  for (int p : group_leaders(parts[0].mesh, axes)) {
    std::vector<Located> views;
    for (const Located& part : parts) views.push_back(group(part, axes, p));
    const std::vector<Located> sums = all_reduce(views);
    for (std::size_t i = 0; i < parts.size(); ++i)
      for (int d : views[i].devices) out[i].part[at(d)] = sums[i].part[at(d)];
  }
  return out;
}

std::vector<Located> Boxing::reduce_scatter(const std::vector<Located>& parts, int axis, const std::vector<graph::MeshLayout>& want) {
  std::vector<Located> out = parts;
  graph::Phase phase = parts[0].phase;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    out[i].layout = want[i];
    phase = std::max(phase, parts[i].phase);
  }
  const Located& first = parts[0];
  for (int p : group_leaders(first.mesh, {axis})) {
    std::vector<Located> views;
    for (const Located& part : parts) views.push_back(group(part, {axis}, p));
    const std::vector<int>& members = views[0].devices;
    const auto k = static_cast<int64_t>(members.size());
    const graph::Communication c{.kind = graph::Communication::Kind::ReduceScatter, .group = members};
    for (int d : members) {
      graph::Graph& g = prepare(local_, d, phase, first.stage);
      // Each value as k rows, row r the block device r keeps (its first dimension cut evenly
      // keeps each block contiguous), the values side by side: one row per device.
      std::vector<Value> rows;
      std::vector<int64_t> widths;
      for (const Located& view : views) {
        widths.push_back(view.type.shape.num_elements() / k);
        rows.push_back(ops::reshape(g, view.on(d), Shape{k, widths.back()}));
      }
      const Value mine = g.communicate(c, {rows.size() == 1 ? rows[0] : ops::concat(g, rows, 1)})[0];
      const std::vector<int> coords =
          graph::mesh_coordinates(static_cast<int>(std::find(first.devices.begin(), first.devices.end(), d) - first.devices.begin()), first.mesh);
      int64_t offset = 0;
      for (std::size_t i = 0; i < parts.size(); ++i) {
        const Value piece = rows.size() == 1 ? mine : ops::slice(g, mine, 1, offset, widths[i]);
        offset += widths[i];
        out[i].part[at(d)] = ops::reshape(g, piece, want[i].local(parts[i].type, coords).shape);
      }
    }
  }
  return out;
}

Located Boxing::within(const Located& v, const Layout& want) {
  using K = Layout::Kind;
  const Layout& now = v.layout[0];
  if (now == want) return v;
  if (v.devices.size() == 1) {  // one device holds all of it, whatever it is called
    Located r = v;
    r.layout = graph::MeshLayout(want);
    return r;
  }
  const K from = now.kind;
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
  throw Error("internal: no layout rule asks for partial sums of a " + now.str() + " value");
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
  Located r{devices, v.mesh, v.layout, std::vector<Value>(v.part.size()), v.type, v.phase, stage};
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const int from = v.devices[i], to = devices[i];
    if (from == to) {
      r.part[at(to)] = v.on(from);
      continue;
    }
    r.part[at(to)] = send(v, from, to, v.layout.local(v.type, graph::mesh_coordinates(static_cast<int>(i), v.mesh)), stage);
  }
  return r;
}

Located Boxing::transfer(const Located& v, const std::vector<int>& devices, int stage) {
  Located r{devices, {static_cast<int>(devices.size())}, Layout::replicated(), std::vector<Value>(v.part.size()), v.type, v.phase, stage};
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
  const Layout& split = v.layout[0];
  const int axis = split.axis;
  const std::vector<int64_t>& shares = split.shares;
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
    if (axis != 0 || !split.even()) {
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
