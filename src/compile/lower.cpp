// The lowering pass, in three walks over the global graph: placement (which devices run each
// node), layouts (each op's rule applied to its inputs' layouts), and emission (each node added
// to the graphs of its devices, with the boxing its inputs need in front of it).
#include "compile/lower.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "compile/boxing.h"
#include "graph/op_registry.h"
#include "tandem/errors.h"

namespace tandem::compile {

namespace {
using graph::Layout;
using graph::MeshLayout;
using graph::Signature;
using graph::Value;

std::size_t at(int i) { return static_cast<std::size_t>(i); }

// Feeds, variables and constants: nodes without inputs, placed where they are read.
bool is_source(const graph::Node& n) { return n.inputs.empty(); }
// A "skippable" update (a LossScaleOptimizer's step) takes its skip flag as one more input, last,
// which it only reads, whatever writes_inputs says of that position for the op's own inputs.
bool writes(const graph::Node& n, int input) {
  if (n.attrs.b("skippable") && input + 1 == static_cast<int>(n.inputs.size())) return false;
  return std::find(n.def->writes_inputs.begin(), n.def->writes_inputs.end(), input) != n.def->writes_inputs.end();
}

// The index in g.variables() of a variable node's variable.
std::size_t variable_index(const graph::Graph& g, const graph::Node& n) {
  const auto id = n.attrs.i("var");
  for (std::size_t i = 0; i < g.variables().size(); ++i)
    if (g.variables()[i].id == id) return i;
  throw Error("internal: variable node for unknown variable " + std::to_string(id));
}

std::string where(const graph::Node& n) { return "'" + n.op + "'" + (n.scope.empty() ? "" : " of '" + n.scope + "'"); }

std::string list(const std::vector<int>& v) {
  std::string s;
  for (int x : v) {
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return s;
}

class Lowering {
 public:
  Lowering(const graph::Graph& g, const std::vector<Value>& fetches, const LoweringOptions& o)
      : g_(g), fetches_(fetches), o_(o), k_(static_cast<int>(o.devices.size())), local_(at(k_)), boxing_(local_, o.all_reduce_bf16), shards_(at(k_)) {}

  Plan run() {
    if (k_ < 1) throw Error("internal: lowering for no devices");
    find_live();
    place();
    assign_stages();
    assign_layouts();
    emit();
    return programs();
  }

 private:
  std::vector<int> all_devices() const {
    std::vector<int> all(at(k_));
    std::iota(all.begin(), all.end(), 0);
    return all;
  }

  // 0. What runs: the fetches, the nodes with side effects (updates, collectives) and what they
  // read, and every source (a feed or variable is fed or saved even where nothing reads it).
  // Nothing else is placed or emitted: a node the gradient rules left unread must not ask for a
  // gradient's sum ahead of its bucket (which would then sum it again).
  void find_live() {
    std::vector<int> sources;
    for (int id = 0; id < g_.size(); ++id)
      if (is_source(g_.node(id))) sources.push_back(id);
    live_ = needed_nodes(g_, fetches_, sources);
  }

  // 1. Placement. The strategy places what it knows; a computation follows its first placed
  // input; a variable, feed or constant goes where it is read; an update where its variable is
  // (whatever the strategy says: it writes the variable's own memory on each of those devices).
  void place() {
    const int n = g_.size();
    devices_.assign(at(n), {});
    mesh_.assign(at(n), {});
    users_.assign(at(n), {});
    for (int id = 0; id < n; ++id)
      if (live_[at(id)])
        for (std::size_t i = 0; i < g_.node(id).inputs.size(); ++i) users_[at(g_.node(id).inputs[i].node)].push_back({id, static_cast<int>(i)});
    if (k_ == 1) {
      devices_.assign(at(n), {0});
      mesh_.assign(at(n), {1});
      return;
    }
    for (int id = 0; id < n; ++id) {
      const graph::Node& node = g_.node(id);
      if (!node.def->writes_inputs.empty()) continue;
      if (o_.place) checked(o_.place(node), id);
      if (devices_[at(id)].empty() && !is_source(node)) follow_inputs(id, false);
    }
    settle_sources_and_updates();
    for (int id = 0; id < n; ++id)
      if (devices_[at(id)].empty() && !is_source(g_.node(id)) && g_.node(id).def->writes_inputs.empty()) follow_inputs(id, true);
    settle_sources_and_updates();
    for (int id = 0; id < n; ++id) {
      if (devices_[at(id)].empty()) devices_[at(id)] = all_devices();  // read by nothing that runs
      if (mesh_[at(id)].empty()) mesh_[at(id)] = {static_cast<int>(devices_[at(id)].size())};
    }
  }

  // A mesh's devices are ascending and as many as its shape says; a list without a shape may
  // name them in any order, and twice.
  void checked(Placement p, int id) {
    const graph::Node& node = g_.node(id);
    if (p.shape.empty()) {
      std::sort(p.devices.begin(), p.devices.end());
      p.devices.erase(std::unique(p.devices.begin(), p.devices.end()), p.devices.end());
    }
    int64_t size = 1;
    for (int s : p.shape) size *= s;
    if (!p.shape.empty() && (size != static_cast<int64_t>(p.devices.size()) || !std::is_sorted(p.devices.begin(), p.devices.end())))
      throw Error("internal: node " + where(node) + " placed on devices " + list(p.devices) + " as a mesh of shape " + list(p.shape));
    for (int d : p.devices)
      if (d < 0 || d >= k_)
        throw Error("internal: node " + where(node) + " placed on device " + std::to_string(d) + " of " + std::to_string(k_));
    mesh_[at(id)] = p.devices.empty() ? std::vector<int>{} : std::move(p.shape);
    devices_[at(id)] = std::move(p.devices);
  }

  void follow_inputs(int id, bool or_everywhere) {
    for (Value in : g_.node(id).inputs)
      if (!devices_[at(in.node)].empty()) {
        devices_[at(id)] = devices_[at(in.node)];
        mesh_[at(id)] = mesh_[at(in.node)];
        return;
      }
    if (or_everywhere) devices_[at(id)] = all_devices();
  }

  // A source is placed once all its readers are (so it is not sent to the ones placed later),
  // then, for what that leaves, once any of them is.
  void settle_sources_and_updates() {
    for (bool all_readers : {true, false})
      for (bool changed = true; changed;) {
        changed = false;
        for (int id = 0; id < g_.size(); ++id)
          if (devices_[at(id)].empty() && settle(id, all_readers)) changed = true;
      }
  }

  bool settle(int id, bool all_readers) {
    const graph::Node& node = g_.node(id);
    std::vector<int> devices;
    if (!node.def->writes_inputs.empty()) {
      const int variable = node.inputs[at(node.def->writes_inputs[0])].node;
      devices = devices_[at(variable)];
      mesh_[at(id)] = mesh_[at(variable)];
    } else if (is_source(node)) {
      std::set<int> readers, writers;  // a slot only its update reads goes with the update
      for (auto [user, input] : users_[at(id)]) {
        if (all_readers && devices_[at(user)].empty()) return false;
        for (int d : devices_[at(user)]) (writes(g_.node(user), input) ? writers : readers).insert(d);
      }
      const std::set<int>& s = readers.empty() ? writers : readers;
      devices.assign(s.begin(), s.end());
      for (auto [user, input] : users_[at(id)])  // laid out as the mesh of a reader on just those devices
        if (devices_[at(user)] == devices) mesh_[at(id)] = mesh_[at(user)];
    }
    if (devices.empty()) return false;
    devices_[at(id)] = std::move(devices);
    return true;
  }

  // Pipeline chunks: the strategy's, else the latest of the inputs'; sources get theirs per
  // device when emitted (their first reader's there).
  void assign_stages() {
    stage_.assign(at(g_.size()), -1);
    for (int id = 0; id < g_.size(); ++id) {
      const graph::Node& node = g_.node(id);
      if (o_.stage) stage_[at(id)] = o_.stage(node);
      if (stage_[at(id)] >= 0 || is_source(node)) continue;
      int s = 0;
      for (Value in : node.inputs) s = std::max(s, stage_[at(in.node)]);
      stage_[at(id)] = s;
    }
  }

  int stage_on(int id, int device) const {
    if (stage_[at(id)] >= 0) return stage_[at(id)];
    int s = -1;
    for (auto [user, input] : users_[at(id)]) {
      const auto& d = devices_[at(user)];
      if (std::find(d.begin(), d.end(), device) != d.end() && (s < 0 || stage_[at(user)] < s)) s = stage_[at(user)];
    }
    return std::max(s, 0);
  }

  // 2. Layouts. An input from another mesh of the same shape keeps its layout (boxing moves each
  // part to its counterpart), from another shape it arrives replicated. Then, mesh axis by axis
  // (outer first, each seeing the blocks the ones before it leave): the op's rule, if it has one
  // and an input is not replicated along the axis, says what it needs; otherwise all is
  // replicated there. A feed's and a variable's layouts are the strategy's.
  void assign_layouts() {
    sig_.assign(at(g_.size()), {});
    for (int id = 0; id < g_.size(); ++id) {
      const graph::Node& node = g_.node(id);
      const std::vector<int>& mesh = mesh_[at(id)];
      std::vector<MeshLayout> in;
      for (std::size_t i = 0; i < node.inputs.size(); ++i) {
        const Value v = node.inputs[i];
        const bool counterparts = mesh_[at(v.node)] == mesh && !gathered_for(node, i);
        in.push_back(counterparts ? out_layout(v.node, v.index) : MeshLayout::replicated(mesh.size()));
      }
      std::optional<MeshLayout> source;  // a feed's or variable's, as the strategy lays it
      const bool several = devices_[at(id)].size() > 1;
      if (several && node.def->source == ops::Source::Feed && o_.feed_layout) source = o_.feed_layout(node, mesh);
      else if (several && node.def->source == ops::Source::Variable && o_.variable_layout)
        source = o_.variable_layout(g_.variables()[variable_index(g_, node)], mesh);
      if (source && source->axes.size() != mesh.size())
        throw Error("internal: the layout " + source->str() + " of " + where(node) + " has " + std::to_string(source->axes.size()) +
                    " axes for a mesh of shape " + list(mesh));
      if (source && node.def->source == ops::Source::Feed)  // the host writes a device's feed as a block of rows (FeedRows)
        for (const Layout& l : source->axes)
          if (l.is_split() && l.axis != 0) throw Error("internal: feed '" + node.attrs.s("name") + "' laid out as " + source->str() + ": feeds split by rows only");
      std::vector<TensorType> in_types, out_types = node.outputs;
      for (Value v : node.inputs) in_types.push_back(g_.type(v));
      std::vector<Signature>& axes = sig_[at(id)];
      for (std::size_t a = 0; a < mesh.size(); ++a) {
        std::vector<Layout> in_a;
        bool all_replicated = true;
        for (std::size_t i = 0; i < in.size(); ++i) {
          in_a.push_back(in[i][a]);
          // A split whose dimension the node wants cut otherwise along the outer axes: its
          // shares fit another block; the rule sees it cut evenly over the block it will get.
          const Layout& l = in_a.back();
          int64_t total = 0;
          for (int64_t share : l.shares) total += share;
          if (l.is_split() && total != in_types[i].shape[l.axis]) in_a.back() = Layout::even_split(l.axis, in_types[i].shape[l.axis], mesh[a]);
          all_replicated = all_replicated && in_a.back().is_replicated();
        }
        std::optional<Signature> s;  // none: everything replicated along this axis
        if (mesh[a] == 1) s = std::nullopt;
        else if (source) s = Signature{{}, {(*source)[a]}};
        else if (!all_replicated && node.def->layout)
          s = node.def->layout(graph::LayoutQuery{g_, node, in_a, mesh[a], a ? &in_types : nullptr, a ? &out_types : nullptr});
        if (!s) s = Signature{std::vector<Layout>(in_a.size()), std::vector<Layout>(node.outputs.size())};
        if (s->in.size() != node.inputs.size() || s->out.size() != node.outputs.size())
          throw Error("internal: the layout rule of " + where(node) + " answered for the wrong number of inputs or outputs");
        for (std::size_t i = 0; i < in_types.size(); ++i) in_types[i] = s->in[i].local(in_types[i], 0);
        for (std::size_t o = 0; o < out_types.size(); ++o) out_types[o] = s->out[o].local(out_types[o], 0);
        axes.push_back(std::move(*s));
      }
      if (live_[at(id)])
        for (std::size_t i = 0; i < node.inputs.size(); ++i) demand(node.inputs[i], devices_[at(id)], mesh, in_layout(id, i));
    }
    for (Value f : fetches_)
      if (f.valid()) demands_[{f.node, f.index}].insert("fetch");
  }

  // Whether node's input i is a split variable that it reads gathered whole (not its update).
  bool gathered_for(const graph::Node& node, std::size_t i) const {
    const graph::Node& source = g_.node(node.inputs[i].node);
    return o_.gather_variables_for_use && source.def->source == ops::Source::Variable && !writes(node, static_cast<int>(i)) &&
           !sig_[at(node.inputs[i].node)].empty() && !out_layout(node.inputs[i].node, 0).is_replicated();
  }

  // What node `id` needs of input i, and what its output o is, on its mesh.
  MeshLayout in_layout(int id, std::size_t i) const {
    MeshLayout l;
    for (const Signature& s : sig_[at(id)]) l.axes.push_back(s.in[i]);
    return l;
  }
  MeshLayout out_layout(int id, int o) const {
    MeshLayout l;
    for (const Signature& s : sig_[at(id)]) l.axes.push_back(s.out[at(o)]);
    return l;
  }

  static std::string target(const std::vector<int>& devices, const std::vector<int>& mesh, const MeshLayout& layout) {
    return list(devices) + "/" + list(mesh) + "," + layout.str();
  }
  void demand(Value v, const std::vector<int>& devices, const std::vector<int>& mesh, const MeshLayout& layout) {
    demands_[{v.node, v.index}].insert(target(devices, mesh, layout));
  }

  // 3. Emission, in the global graph's order (inputs before their readers).
  void emit() {
    value_.assign(at(g_.size()), {});
    local_node_.assign(at(g_.size()), std::vector<int>(at(k_), -1));
    for (const graph::VariableInfo& v : g_.variables()) variables_[v.id] = v;
    bool reduced = false;
    for (int id = 0; id < g_.size(); ++id) {
      if (!live_[at(id)]) continue;
      const graph::Node& node = g_.node(id);
      if (!reduced && node.def->gradient_input >= 0) {
        reduce_gradients(id);
        reduced = true;
      }
      std::vector<Located> ins;
      const int reader_stage = std::max(0, stage_[at(id)]);
      for (std::size_t i = 0; i < node.inputs.size(); ++i) {
        const std::optional<graph::Phase> phase = gathered_for(node, i) ? std::optional(node.phase) : std::nullopt;
        ins.push_back(convert(node.inputs[i], devices_[at(id)], mesh_[at(id)], in_layout(id, i), reader_stage, phase));
        const Located& own = value_[at(node.inputs[i].node)][at(node.inputs[i].index)];
        if (writes(node, static_cast<int>(i)) && ins.back().part != own.part)
          throw Error("internal: lowering " + where(node) + ": the variable it writes (input " + std::to_string(i) + ", '" +
                      variables_.at(static_cast<int>(g_.node(node.inputs[i].node).attrs.i("var"))).path + "') would be a copy on its devices (it lies " + own.layout.str() + ", the update wants " + in_layout(id, i).str() + ")");
      }
      emit_node(id, ins);
    }
    // Fetches are read back by rows (compile::FetchSite): a split along another axis is gathered
    // first, and so are partial sums where other mesh axes split the rows.
    for (Value f : fetches_) {
      if (!f.valid()) {  // not in this graph
        fetched_.push_back({{}, {}, Layout::replicated(), std::vector<Value>(at(k_)), {}});
        continue;
      }
      const Located& loc = value_[at(f.node)][at(f.index)];
      MeshLayout want = loc.layout;
      for (Layout& l : want.axes)
        if (l.is_split() && l.axis != 0) l = Layout::replicated();
      const bool rows = std::any_of(want.axes.begin(), want.axes.end(), [](const Layout& l) { return l.is_split(); });
      for (Layout& l : want.axes)
        if (rows && l.is_partial()) l = Layout::replicated();
      fetched_.push_back(want == loc.layout ? loc : convert(f, loc.devices, loc.mesh, want, loc.stage));
    }
  }

  void emit_node(int id, const std::vector<Located>& ins) {
    const graph::Node& node = g_.node(id);
    const std::vector<int>& devices = devices_[at(id)];
    const std::vector<int>& mesh = mesh_[at(id)];
    const std::vector<Signature>& axes = sig_[at(id)];
    auto& out = value_[at(id)];
    for (std::size_t o = 0; o < node.outputs.size(); ++o)
      out.push_back({devices, mesh, out_layout(id, static_cast<int>(o)), std::vector<Value>(at(k_)), node.outputs[o], node.phase,
                     stage_on(id, devices.front())});
    for (std::size_t p = 0; p < devices.size(); ++p) {
      const int d = devices[p];
      const std::vector<int> coords = graph::mesh_coordinates(static_cast<int>(p), mesh);
      graph::Graph& lg = local_[at(d)];
      lg.scope = node.scope;
      lg.role = node.role;
      lg.phase = node.phase;
      lg.stage = stage_on(id, d);
      std::vector<Value> outs;
      try {
        if (node.def->source == ops::Source::Feed) {
          outs = {lg.placeholder(node.attrs.s("name"), out[0].layout.local(node.outputs[0], coords))};
        } else if (node.def->source == ops::Source::Variable) {
          graph::VariableInfo info = variables_.at(static_cast<int>(node.attrs.i("var")));
          if (std::optional<VariableShard> shard = VariableShard::of(out[0].layout, info.type, coords)) shards_[at(d)][info.id] = *shard;
          info.type = out[0].layout.local(info.type, coords);
          outs = {lg.variable(info)};
        } else {
          graph::Attrs attrs = node.attrs;
          if (node.def->localize)  // the outer axes' blocks first, each later axis's within them
            for (std::size_t a = 0; a < axes.size(); ++a) node.def->localize(attrs, axes[a], coords[a]);
          std::vector<Value> inputs;
          for (const Located& in : ins) inputs.push_back(in.on(d));
          outs = node.communication ? lg.communicate(*node.communication, inputs, std::move(attrs))
                                    : lg.add_multi(node.op, inputs, std::move(attrs));
        }
      } catch (const std::exception& e) {
        throw Error("internal: lowering " + where(node) + " for " + o_.devices[at(d)] + ": " + e.what());
      }
      const int local_id = outs.empty() ? lg.size() - 1 : outs[0].node;
      local_node_[at(id)][at(d)] = local_id;
      for (int a : node.after)
        if (local_node_[at(a)][at(d)] >= 0) lg.node(local_id).after.push_back(local_node_[at(a)][at(d)]);
      for (std::size_t o = 0; o < outs.size(); ++o) {
        const TensorType want = out[o].layout.local(node.outputs[o], coords);
        if (!(lg.type(outs[o]) == want))
          throw Error("internal: lowering " + where(node) + " for " + o_.devices[at(d)] + ": its layout " + out[o].layout.str() +
                      " means a part of shape " + want.shape.str() + ", the op made " + lg.type(outs[o]).shape.str());
        out[o].part[at(d)] = outs[o];
      }
    }
  }

  // The gradients that updates need summed over the devices, in buckets in the order backward
  // produces them (the last layers first); each bucket's all-reduce starts once its last
  // gradient exists, while backward goes on. Gradients an update needs as a block of the sum
  // (a weight split over the axis its gradient is partial along) are reduce-scattered in
  // buckets alike, each one collective.
  void reduce_gradients(int first_update) {
    struct Gradient {
      Value value;
      MeshLayout want;
      Reduction sum;
    };
    std::vector<Gradient> grads;
    for (int id = first_update; id < g_.size(); ++id) {
      const graph::Node& node = g_.node(id);
      const int gi = node.def->gradient_input;
      if (gi < 0 || !live_[at(id)]) continue;
      const Value v = node.inputs[at(gi)];
      if (v.node >= first_update) continue;  // made by the updates themselves (a LossScaleOptimizer's unscaled gradient): not emitted yet
      const Located& src = value_[at(v.node)][at(v.index)];
      if (src.devices != devices_[at(id)] || src.mesh != mesh_[at(id)]) continue;
      const MeshLayout want = in_layout(id, at(gi));
      std::optional<Reduction> sum = reduction(src.layout, want);
      if (!sum) continue;
      if (converted_.count(key(v, src.devices, src.mesh, want))) continue;  // summed already, for a reader in backward
      if (std::none_of(grads.begin(), grads.end(), [&](const Gradient& g) { return g.value == v; })) grads.push_back({v, want, std::move(*sum)});
    }
    std::stable_sort(grads.begin(), grads.end(), [](const Gradient& a, const Gradient& b) { return a.value.node < b.value.node; });
    std::vector<const Gradient*> bucket;
    std::size_t bytes = 0;
    auto flush = [&] {
      if (bucket.empty()) return;
      std::vector<Located> parts;
      std::vector<MeshLayout> wants;
      for (const Gradient* g : bucket) {
        parts.push_back(unshared(g->value));
        wants.push_back(g->want);
      }
      const Reduction& sum = bucket[0]->sum;
      const std::vector<Located> sums = sum.scatter ? boxing_.reduce_scatter(parts, sum.axes[0], wants) : boxing_.all_reduce(parts, sum.axes);
      for (std::size_t i = 0; i < bucket.size(); ++i)
        converted_[key(bucket[i]->value, sums[i].devices, sums[i].mesh, bucket[i]->want)] = sums[i];
      bucket.clear();
      bytes = 0;
    };
    // Buckets hold gradients of one mesh (a pipeline's stages have their own) summed alike along
    // the same axes, of one pipeline chunk, and of one dtype.
    std::map<std::tuple<std::vector<int>, std::vector<int>, Reduction, int>, std::vector<const Gradient*>> by_group;
    for (const Gradient& g : grads) {
      const Located& src = value_[at(g.value.node)][at(g.value.index)];
      by_group[{src.devices, src.mesh, g.sum, src.stage}].push_back(&g);
    }
    for (const auto& [devices, group] : by_group) {
      for (const Gradient* g : group) {
        const Located& src = value_[at(g->value.node)][at(g->value.index)];
        const TensorType t = src.layout.local(src.type, std::vector<int>(src.mesh.size(), 0));
        if (!bucket.empty() && (bytes + t.bytes() > o_.bucket_bytes || g_.type(bucket.back()->value).dtype != t.dtype)) flush();
        bucket.push_back(g);
        bytes += t.bytes();
      }
      flush();
    }
  }

  static std::string key(Value v, const std::vector<int>& devices, const std::vector<int>& mesh, const MeshLayout& layout) {
    return std::to_string(v.node) + ":" + std::to_string(v.index) + "@" + target(devices, mesh, layout);
  }

  // A partial value as an all-reduce may overwrite: a copy when anything else reads it.
  Located unshared(Value v) {
    const Located& src = value_[at(v.node)][at(v.index)];
    return demands_[{v.node, v.index}].size() > 1 ? boxing_.copy(src) : src;
  }

  // `v` as `want` on a reader's mesh, made once per value and target; with `phase`, once per
  // phase too, the conversion's nodes in that phase (a weight gathered for forward and again
  // for backward, each freed after its last reader there).
  Located convert(Value v, const std::vector<int>& devices, const std::vector<int>& mesh, const MeshLayout& want, int reader_stage,
                  std::optional<graph::Phase> phase = std::nullopt) {
    const Located& src = value_[at(v.node)][at(v.index)];
    if (src.devices == devices && src.mesh == mesh && src.layout == want) return src;
    std::string k = key(v, devices, mesh, want);
    if (phase) k += "#" + std::to_string(static_cast<int>(*phase));
    if (auto it = converted_.find(k); it != converted_.end()) return it->second;
    bool sums = false;  // an all-reduce works in place
    for (std::size_t a = 0; a < src.layout.axes.size(); ++a)
      sums = sums || (src.layout[a].is_partial() && (a >= want.axes.size() || !want[a].is_partial() || src.mesh != mesh));
    Located from = sums ? unshared(v) : src;
    if (phase) from.phase = *phase;
    return converted_[k] = boxing_.convert(from, devices, mesh, want, reader_stage);
  }

  bool kept(int d) const { return o_.program_count < 0 || (d >= o_.first_program && d < o_.first_program + o_.program_count); }

  // Where the host reads a fetch (its layout as emit left it): from the devices at coordinate 0
  // of the axes that replicate it, in mesh order; their parts are rows, partial sums, or a whole.
  FetchSite site_of(const Located& loc) const {
    FetchSite all;
    const bool whole = loc.layout.is_replicated();
    bool partial = false;
    for (const Layout& l : loc.layout.axes) partial = partial || l.is_partial();
    std::vector<int64_t> rows;
    for (std::size_t p = 0; p < loc.devices.size(); ++p) {
      const std::vector<int> c = graph::mesh_coordinates(static_cast<int>(p), loc.mesh);
      bool first = true;
      for (std::size_t a = 0; a < c.size(); ++a) first = first && (!loc.layout[a].is_replicated() || c[a] == 0 || whole);
      if (!first) continue;
      all.programs.push_back(loc.devices[p]);
      if (!whole && !partial) rows.push_back(loc.layout.local(loc.type, c).shape[0]);
    }
    all.layout = whole ? Layout::replicated() : partial ? Layout::partial() : Layout::split(0, rows);
    if (o_.program_count < 0) return all;
    FetchSite mine{all.layout, {}, {}};
    for (std::size_t i = 0; i < all.programs.size(); ++i)
      if (kept(all.programs[i])) {
        mine.programs.push_back(all.programs[i] - o_.first_program);
        mine.places.push_back(static_cast<int>(i));
      }
    return mine;
  }

  // The programs of the kept devices: fused (compile/fusion.h), ordered, memory-planned and
  // scheduled. The others are another process's: lowered for their communication, never run here.
  Plan programs() {
    Plan plan;
    for (const Located& loc : fetched_) plan.fetches.push_back(site_of(loc));
    for (int d = 0; d < k_; ++d) {
      if (!kept(d)) continue;
      std::vector<Value> fetches;
      for (const Located& loc : fetched_) fetches.push_back(loc.on(d));
      Program p = single_program(o_.devices[at(d)], std::move(local_[at(d)]), fetches, o_.micro_batches, o_.in_flight ? o_.in_flight(d) : 1);
      p.rank = d;
      for (int id = 0; id < g_.size(); ++id) {
        const graph::Node& node = g_.node(id);
        if (node.def->source != ops::Source::Feed || local_node_[at(id)][at(d)] < 0 || node.outputs[0].shape.rank() < 1) continue;
        const std::vector<int>& devices = devices_[at(id)];
        const int position = static_cast<int>(std::find(devices.begin(), devices.end(), d) - devices.begin());
        const auto [offset, rows] = out_layout(id, 0).block(node.outputs[0], graph::mesh_coordinates(position, mesh_[at(id)]))[0];
        p.feeds[node.attrs.s("name")] = FeedRows{offset, rows};
      }
      p.shards = shards_[at(d)];
      plan.schedule.push_back(o_.schedule ? o_.schedule(p, d) : run_all_blocks(p));
      plan.programs.push_back(std::move(p));
    }
    return plan;
  }

  const graph::Graph& g_;
  const std::vector<Value>& fetches_;
  const LoweringOptions& o_;
  int k_;
  std::vector<graph::Graph> local_;
  Boxing boxing_;
  std::vector<bool> live_;                                   // per node
  std::vector<std::vector<int>> devices_;                    // per node: its mesh's devices
  std::vector<std::vector<int>> mesh_;                       // per node: its mesh's shape
  std::vector<std::vector<std::pair<int, int>>> users_;      // per node: (reader, input index)
  std::vector<std::vector<Signature>> sig_;                  // per node, per mesh axis
  std::vector<int> stage_;                                   // per node (-1: a source, per device)
  std::map<std::pair<int, int>, std::set<std::string>> demands_;  // per value: what its readers need
  std::vector<std::vector<Located>> value_;                  // per node, per output
  std::vector<Located> fetched_;                             // per fetch, as it is read
  std::vector<std::vector<int>> local_node_;                 // per node, per device
  std::map<std::string, Located> converted_;
  std::map<int, graph::VariableInfo> variables_;
  std::vector<std::map<int, VariableShard>> shards_;  // per device: the variables it holds a block of
};
}  // namespace

Plan lower(const graph::Graph& g, const std::vector<graph::Value>& fetches, const LoweringOptions& options) {
  return Lowering(g, fetches, options).run();
}

}  // namespace tandem::compile
