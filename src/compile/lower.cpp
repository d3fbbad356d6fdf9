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
#include "compile/nest.h"
#include "graph/op_registry.h"
#include "tandem/errors.h"

namespace tandem::compile {

namespace {
using graph::Layout;
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
    users_.assign(at(n), {});
    for (int id = 0; id < n; ++id)
      if (live_[at(id)])
        for (std::size_t i = 0; i < g_.node(id).inputs.size(); ++i) users_[at(g_.node(id).inputs[i].node)].push_back({id, static_cast<int>(i)});
    if (k_ == 1) {
      devices_.assign(at(n), {0});
      return;
    }
    for (int id = 0; id < n; ++id) {
      const graph::Node& node = g_.node(id);
      if (!node.def->writes_inputs.empty()) continue;
      if (o_.place) devices_[at(id)] = checked(o_.place(node), node);
      if (devices_[at(id)].empty() && !is_source(node)) follow_inputs(id, false);
    }
    settle_sources_and_updates();
    for (int id = 0; id < n; ++id)
      if (devices_[at(id)].empty() && !is_source(g_.node(id)) && g_.node(id).def->writes_inputs.empty()) follow_inputs(id, true);
    settle_sources_and_updates();
    for (auto& d : devices_)
      if (d.empty()) d = all_devices();  // read by nothing that runs
  }

  std::vector<int> checked(std::vector<int> devices, const graph::Node& node) const {
    std::sort(devices.begin(), devices.end());
    devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
    for (int d : devices)
      if (d < 0 || d >= k_)
        throw Error("internal: node " + where(node) + " placed on device " + std::to_string(d) + " of " + std::to_string(k_));
    return devices;
  }

  void follow_inputs(int id, bool or_everywhere) {
    for (Value in : g_.node(id).inputs)
      if (!devices_[at(in.node)].empty()) {
        devices_[at(id)] = devices_[at(in.node)];
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
      devices = devices_[at(node.inputs[at(node.def->writes_inputs[0])].node)];
    } else if (is_source(node)) {
      std::set<int> readers, writers;  // a slot only its update reads goes with the update
      for (auto [user, input] : users_[at(id)]) {
        if (all_readers && devices_[at(user)].empty()) return false;
        for (int d : devices_[at(user)]) (writes(g_.node(user), input) ? writers : readers).insert(d);
      }
      const std::set<int>& s = readers.empty() ? writers : readers;
      devices.assign(s.begin(), s.end());
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

  // 2. Layouts. An input from as many other devices keeps its layout (boxing moves each part to
  // its counterpart), from another number of devices it arrives replicated; the op's rule, if it
  // has one and any input is not replicated, says what it needs; otherwise all is replicated.
  void assign_layouts() {
    sig_.assign(at(g_.size()), {});
    for (int id = 0; id < g_.size(); ++id) {
      const graph::Node& node = g_.node(id);
      const std::vector<int>& devices = devices_[at(id)];
      const int m = static_cast<int>(devices.size());
      std::vector<Layout> in;
      bool all_replicated = true;
      for (Value v : node.inputs) {
        const bool counterparts = devices_[at(v.node)].size() == devices.size();
        in.push_back(counterparts ? sig_[at(v.node)].out[at(v.index)] : Layout::replicated());
        all_replicated = all_replicated && in.back().is_replicated();
      }
      std::optional<Signature> s;  // none: everything replicated
      if (m > 1 && node.def->source == ops::Source::Feed && o_.feed_layout) s = Signature{{}, {o_.feed_layout(node, m)}};
      else if (m > 1 && node.def->source == ops::Source::Variable && o_.variable_layout)
        s = Signature{{}, {o_.variable_layout(g_.variables()[variable_index(g_, node)], m)}};
      else if (m > 1 && !all_replicated && node.def->layout)
        s = node.def->layout(graph::LayoutQuery{g_, node, in, m});
      if (!s) s = Signature{std::vector<Layout>(in.size()), std::vector<Layout>(node.outputs.size())};
      if (s->in.size() != node.inputs.size() || s->out.size() != node.outputs.size())
        throw Error("internal: the layout rule of " + where(node) + " answered for the wrong number of inputs or outputs");
      if (live_[at(id)])
        for (std::size_t i = 0; i < node.inputs.size(); ++i) demand(node.inputs[i], devices, s->in[i]);
      sig_[at(id)] = std::move(*s);
    }
    for (Value f : fetches_)
      if (f.valid()) demands_[{f.node, f.index}].insert("fetch");
  }

  static std::string target(const std::vector<int>& devices, const Layout& layout) {
    std::string s;
    for (int d : devices) s += std::to_string(d) + ",";
    return s + layout.str();
  }
  void demand(Value v, const std::vector<int>& devices, const Layout& layout) {
    demands_[{v.node, v.index}].insert(target(devices, layout));
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
        ins.push_back(convert(node.inputs[i], devices_[at(id)], sig_[at(id)].in[i], reader_stage));
        const Located& own = value_[at(node.inputs[i].node)][at(node.inputs[i].index)];
        if (writes(node, static_cast<int>(i)) && ins.back().part != own.part)
          throw Error("internal: lowering " + where(node) + ": the variable it writes (input " + std::to_string(i) + ", '" +
                      variables_.at(static_cast<int>(g_.node(node.inputs[i].node).attrs.i("var"))).path + "') would be a copy on its devices (it lies " + own.layout.str() + ", the update wants " + sig_[at(id)].in[i].str() + ")");
      }
      emit_node(id, ins);
    }
    // Fetches are read back by rows: one split along another axis is gathered first.
    for (Value f : fetches_) {
      if (!f.valid()) {  // not in this graph: a pipeline stage's program lowered again holds only its own
        fetched_.push_back({{}, Layout::replicated(), std::vector<Value>(at(k_)), {}});
        continue;
      }
      const Located& loc = value_[at(f.node)][at(f.index)];
      fetched_.push_back(loc.layout.is_split() && loc.layout.axis != 0 ? convert(f, loc.devices, Layout::replicated(), loc.stage) : loc);
    }
  }

  void emit_node(int id, const std::vector<Located>& ins) {
    const graph::Node& node = g_.node(id);
    const std::vector<int>& devices = devices_[at(id)];
    const Signature& s = sig_[at(id)];
    auto& out = value_[at(id)];
    for (std::size_t o = 0; o < node.outputs.size(); ++o)
      out.push_back({devices, s.out[o], std::vector<Value>(at(k_)), node.outputs[o], node.phase, stage_on(id, devices.front())});
    for (std::size_t p = 0; p < devices.size(); ++p) {
      const int d = devices[p];
      const int position = static_cast<int>(p);
      graph::Graph& lg = local_[at(d)];
      lg.scope = node.scope;
      lg.role = node.role;
      lg.phase = node.phase;
      lg.stage = stage_on(id, d);
      std::vector<Value> outs;
      try {
        if (node.def->source == ops::Source::Feed) {
          outs = {lg.placeholder(node.attrs.s("name"), s.out[0].local(node.outputs[0], position))};
        } else if (node.def->source == ops::Source::Variable) {
          graph::VariableInfo info = variables_.at(static_cast<int>(node.attrs.i("var")));
          const Layout& l = s.out[0];
          if (l.is_split()) shards_[at(d)][info.id] = {{{l.axis, l.offset(position), l.shares[at(position)]}}};
          info.type = l.local(info.type, position);
          outs = {lg.variable(info)};
        } else {
          graph::Attrs attrs = node.attrs;
          if (node.def->localize) node.def->localize(attrs, s, position);
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
        const TensorType want = s.out[o].local(node.outputs[o], position);
        if (!(lg.type(outs[o]) == want))
          throw Error("internal: lowering " + where(node) + " for " + o_.devices[at(d)] + ": its layout " + s.out[o].str() +
                      " means a part of shape " + want.shape.str() + ", the op made " + lg.type(outs[o]).shape.str());
        out[o].part[at(d)] = outs[o];
      }
    }
  }

  // The gradients that updates need summed over the devices, in buckets in the order backward
  // produces them (the last layers first); each bucket's all-reduce starts once its last
  // gradient exists, while backward goes on.
  void reduce_gradients(int first_update) {
    std::vector<Value> grads;
    for (int id = first_update; id < g_.size(); ++id) {
      const graph::Node& node = g_.node(id);
      const int gi = node.def->gradient_input;
      if (gi < 0 || !live_[at(id)]) continue;
      const Value v = node.inputs[at(gi)];
      if (v.node >= first_update) continue;  // made by the updates themselves (a LossScaleOptimizer's unscaled gradient): not emitted yet
      const Located& src = value_[at(v.node)][at(v.index)];
      if (!src.layout.is_partial() || src.devices != devices_[at(id)] || !sig_[at(id)].in[at(gi)].is_replicated()) continue;
      if (converted_.count(key(v, src.devices, Layout::replicated()))) continue;  // summed already, for a reader in backward
      if (std::find(grads.begin(), grads.end(), v) == grads.end()) grads.push_back(v);
    }
    std::stable_sort(grads.begin(), grads.end(), [](Value a, Value b) { return a.node < b.node; });
    std::vector<Value> bucket;
    std::size_t bytes = 0;
    auto flush = [&] {
      if (bucket.empty()) return;
      std::vector<Located> parts;
      for (Value v : bucket) parts.push_back(unshared(v));
      const std::vector<Located> sums = boxing_.all_reduce(parts);
      for (std::size_t i = 0; i < bucket.size(); ++i)
        converted_[key(bucket[i], sums[i].devices, Layout::replicated())] = sums[i];
      bucket.clear();
      bytes = 0;
    };
    // Buckets hold gradients of one device group (a pipeline's stages have their own), one
    // pipeline chunk, and one dtype.
    std::map<std::pair<std::vector<int>, int>, std::vector<Value>> by_group;
    for (Value v : grads) by_group[{value_[at(v.node)][at(v.index)].devices, value_[at(v.node)][at(v.index)].stage}].push_back(v);
    for (const auto& [devices, group] : by_group) {
      for (Value v : group) {
        const TensorType& t = g_.type(v);
        if (!bucket.empty() && (bytes + t.bytes() > o_.bucket_bytes || g_.type(bucket.back()).dtype != t.dtype)) flush();
        bucket.push_back(v);
        bytes += t.bytes();
      }
      flush();
    }
  }

  static std::string key(Value v, const std::vector<int>& devices, const Layout& layout) {
    return std::to_string(v.node) + ":" + std::to_string(v.index) + "@" + target(devices, layout);
  }

  // A partial value as an all-reduce may overwrite: a copy when anything else reads it.
  Located unshared(Value v) {
    const Located& src = value_[at(v.node)][at(v.index)];
    return demands_[{v.node, v.index}].size() > 1 ? boxing_.copy(src) : src;
  }

  Located convert(Value v, const std::vector<int>& devices, const Layout& want, int reader_stage) {
    const Located& src = value_[at(v.node)][at(v.index)];
    if (src.devices == devices && src.layout == want) return src;
    const std::string k = key(v, devices, want);
    if (auto it = converted_.find(k); it != converted_.end()) return it->second;
    const Located from = src.layout.is_partial() && !want.is_partial() ? unshared(v) : src;
    return converted_[k] = boxing_.convert(from, devices, want, reader_stage);
  }

  Plan programs() {
    Plan plan;
    for (const Located& loc : fetched_) plan.fetches.push_back({loc.layout, loc.devices});
    for (int d = 0; d < k_; ++d) {
      std::vector<Value> fetches;
      for (const Located& loc : fetched_) fetches.push_back(loc.on(d));
      Program p;
      const bool kept = o_.program_count < 0 || (d >= o_.first_program && d < o_.first_program + o_.program_count);
      if (!kept) {  // another process's: lowered for its communication, never run here
        plan.programs.emplace_back();
        plan.schedule.emplace_back();
        continue;
      }
      if (o_.final_programs) {
        p = single_program(o_.devices[at(d)], std::move(local_[at(d)]), fetches, o_.micro_batches, o_.in_flight ? o_.in_flight(d) : 1);
      } else {
        p.device = o_.devices[at(d)];
        p.graph = std::move(local_[at(d)]);
        p.fetches = fetches;
      }
      p.rank = d;
      for (int id = 0; id < g_.size(); ++id) {
        const graph::Node& node = g_.node(id);
        if (node.def->source != ops::Source::Feed || local_node_[at(id)][at(d)] < 0 || node.outputs[0].shape.rank() < 1) continue;
        const std::vector<int>& devices = devices_[at(id)];
        const int position = static_cast<int>(std::find(devices.begin(), devices.end(), d) - devices.begin());
        const Layout& l = sig_[at(id)].out[0];
        p.feeds[node.attrs.s("name")] = l.is_split() ? FeedRows{l.offset(position), l.shares[at(position)]}
                                                     : FeedRows{0, node.outputs[0].shape[0]};
      }
      p.shards = shards_[at(d)];
      plan.schedule.push_back(!o_.final_programs ? std::vector<Action>{} : o_.schedule ? o_.schedule(p, d) : run_all_blocks(p));
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
  std::vector<std::vector<int>> devices_;                    // per node
  std::vector<std::vector<std::pair<int, int>>> users_;      // per node: (reader, input index)
  std::vector<Signature> sig_;                               // per node
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

namespace {
// Programs [first, first + count) of `all`, with their schedules; a fetch keeps its layout over
// every program and notes where each kept one is.
Plan keep_programs(Plan all, int first, int count) {
  if (first < 0 || count < 0 || first + count > static_cast<int>(all.programs.size()))
    throw Error("internal: keeping programs " + std::to_string(first) + ".." + std::to_string(first + count - 1) + " of " +
                std::to_string(all.programs.size()));
  Plan mine;
  for (int p = first; p < first + count; ++p) {
    mine.programs.push_back(std::move(all.programs[at(p)]));
    mine.schedule.push_back(std::move(all.schedule[at(p)]));
  }
  for (const FetchSite& site : all.fetches) {
    FetchSite kept{site.layout, {}, {}};
    for (std::size_t i = 0; i < site.programs.size(); ++i)
      if (site.programs[i] >= first && site.programs[i] < first + count) {
        kept.programs.push_back(site.programs[i] - first);
        kept.places.push_back(site.place(i));
      }
    mine.fetches.push_back(std::move(kept));
  }
  return mine;
}
}  // namespace

Plan lower(const graph::Graph& g, const std::vector<graph::Value>& fetches, const LoweringOptions& options) {
  Plan plan;
  if (options.within) {
    LoweringOptions rows = options;
    rows.within = nullptr, rows.first_program = 0, rows.program_count = -1;
    rows.final_programs = false;  // lowered again below: fused and planned only then
    plan = nest(Lowering(g, fetches, rows).run(), [&](const Program& row, int i) { return lower(row.graph, row.fetches, options.within(i)); });
  } else {
    plan = Lowering(g, fetches, options).run();  // only the kept programs are made
  }
  if (options.program_count < 0) return plan;
  return keep_programs(std::move(plan), options.first_program, options.program_count);
}

}  // namespace tandem::compile
