#include "compile/fusion.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>

#include "graph/autocast.h"
#include "graph/op_registry.h"
#include "ops/fused_activation.h"
#include "ops/ops.h"

namespace tandem::compile {

namespace {
using graph::Node;
using graph::Value;

std::size_t at(int i) { return static_cast<std::size_t>(i); }

class Fusion {
 public:
  Fusion(graph::Graph& g, std::vector<Value>& fetches) : g_(g), fetches_(fetches) {
    readers_.resize(at(g.size()));
    for (int id = 0; id < g.size(); ++id) {
      for (const Value& v : g.node(id).inputs) readers_[at(v.node)].push_back({id, v.index});
      for (int a : g.node(id).after) ordered_.insert(a);
    }
    for (const Value& v : fetches) fetched_.insert({v.node, v.index});
  }

  void run() {
    const int n = g_.size();  // the nodes fusion adds no new ones; rewritten nodes keep their ids
    for (int id = 0; id < n; ++id)
      if (g_.node(id).op == "bias_add") fuse_product(id);
    for (int id = 0; id < n; ++id) {
      const std::string& op = g_.node(id).op;
      if (op == "relu_grad" || op == "sigmoid_grad" || op == "tanh_grad") fuse_gradient(id);
    }
  }

 private:
  // The only reader of output 0 of `producer`, or -1: none, several, fetched, or another block.
  int sole_reader(int producer) const {
    const auto& readers = readers_[at(producer)];
    int reader = -1;
    for (const auto& [node, index] : readers) {
      if (index != 0) continue;
      if (reader >= 0 && reader != node) return -1;
      reader = node;
    }
    if (reader < 0 || fetched_.count({producer, 0}) || !same_block(producer, reader)) return -1;
    const std::vector<Value>& inputs = g_.node(reader).inputs;  // read once, as input 0 (not as a bias too)
    if (std::count(inputs.begin(), inputs.end(), Value{producer, 0}) != 1 || !(inputs[0] == Value{producer, 0})) return -1;
    return reader;
  }
  bool same_block(int a, int b) const { return g_.node(a).phase == g_.node(b).phase && g_.node(a).stage == g_.node(b).stage; }
  // A node that no control dependency names can disappear.
  bool removable(int id) const { return !ordered_.count(id) && !g_.node(id).def->has_side_effects; }

  // `target` becomes `op` over `inputs` with `attrs`, taking over the control dependencies of
  // the nodes it replaces.
  void rewrite(int target, const std::string& op, std::vector<Value> inputs, graph::Attrs attrs, const std::vector<int>& replaced) {
    Node& node = g_.node(target);
    std::vector<TensorType> types;
    for (const Value& v : inputs) types.push_back(g_.type(v));
    node.def = &ops::find(op);
    node.outputs = node.def->infer(attrs, types);
    node.op = op;
    node.inputs = std::move(inputs);
    node.attrs = std::move(attrs);
    for (int r : replaced)
      for (int a : g_.node(r).after)
        if (std::find(node.after.begin(), node.after.end(), a) == node.after.end()) node.after.push_back(a);
  }

  // bias_add over a matmul or conv2d, and the activation after it.
  void fuse_product(int bias_add) {
    const Node& b = g_.node(bias_add);
    const int product = b.inputs[0].node;
    const Node& p = g_.node(product);
    const std::string fused = p.op == "matmul" ? "fused_matmul" : p.op == "conv2d" ? "fused_conv2d" : "";
    if (fused.empty() || b.inputs[0].index != 0 || sole_reader(product) != bias_add || !removable(product)) return;
    int target = bias_add;
    std::string activation = "linear";
    const int next = sole_reader(bias_add);
    if (next >= 0 && ops::fusable_activation(g_.node(next).op) && removable(bias_add)) target = next, activation = g_.node(next).op;
    graph::Attrs attrs = p.attrs;
    attrs.set("activation", activation);
    rewrite(target, fused, {p.inputs[0], p.inputs[1], b.inputs[1]}, std::move(attrs), {product, bias_add});
  }

  void fuse_gradient(int grad) {
    const Node& r = g_.node(grad);
    const Value dy = r.inputs[0], y = r.inputs[1];
    const Node& pool = g_.node(dy.node);
    // max_pool2d_grad(x = y, ·) → relu_grad(·, y): the pooling gradient applies the mask.
    if (r.op == "relu_grad" && pool.op == "max_pool2d_grad" && pool.inputs[0] == y && !pool.attrs.b("relu") &&
        sole_reader(dy.node) == grad && removable(dy.node)) {
      graph::Attrs attrs = pool.attrs;
      attrs.set("relu", true);
      rewrite(grad, "max_pool2d_grad", pool.inputs, std::move(attrs), {dy.node});
      return;
    }
    bool widened = false;
    const int sum = column_sum_reader(grad, widened);
    if (sum < 0) return;
    graph::Attrs attrs;
    attrs.set("activation", r.op.substr(0, r.op.size() - std::strlen("_grad")));
    if (widened) attrs.set("output_dtype", static_cast<int64_t>(DType::F32));
    rewrite(grad, "activation_bias_grad", {dy, y}, std::move(attrs), {sum});
    redirect({sum, 0}, {grad, 1});
  }

  // A reader of output 0 of `grad` that sums it over every axis but the last, or -1. Under mixed
  // precision the sum is float32 and reads a cast of the 16-bit gradient: then `widened`.
  int column_sum_reader(int grad, bool& widened) const {
    for (const auto& [reader, index] : readers_[at(grad)])
      if (index == 0 && is_column_sum(grad, reader)) return reader;
    if (!graph::is_16bit(g_.node(grad).outputs[0].dtype)) return -1;
    for (const auto& [cast, index] : readers_[at(grad)]) {
      const Node& c = g_.node(cast);
      if (index != 0 || c.op != "cast" || c.outputs[0].dtype != DType::F32 || !same_block(grad, cast)) continue;
      for (const auto& [reader, cast_index] : readers_[at(cast)])
        if (cast_index == 0 && is_column_sum(cast, reader)) {
          widened = true;
          return reader;
        }
    }
    return -1;
  }
  bool is_column_sum(int grad, int reader) const {
    const Node& s = g_.node(reader);
    if (s.op != "reduce_sum" || s.attrs.b("keepdims") || !same_block(grad, reader) || !removable(reader)) return false;
    const int rank = g_.node(grad).outputs[0].shape.rank();
    std::set<int64_t> axes;
    for (int64_t a : s.attrs.ints("axes")) axes.insert(a < 0 ? a + rank : a);
    if (rank < 2 || static_cast<int>(axes.size()) != rank - 1) return false;
    for (int i = 0; i < rank - 1; ++i)
      if (!axes.count(i)) return false;
    return true;
  }

  // Every reader (and fetch) of `from` reads `to` instead.
  void redirect(Value from, Value to) {
    for (const auto& [reader, index] : readers_[at(from.node)])
      for (Value& v : g_.node(reader).inputs)
        if (v == from) v = to;
    for (Value& v : fetches_)
      if (v == from) v = to;
    for (auto& r : readers_[at(from.node)]) readers_[at(to.node)].push_back({r.first, to.index});
  }

  graph::Graph& g_;
  std::vector<Value>& fetches_;
  std::vector<std::vector<std::pair<int, int>>> readers_;  // per node: (reader, output index read)
  std::set<int> ordered_;                                  // nodes named by some control dependency
  std::set<std::pair<int, int>> fetched_;
};
}  // namespace

void fuse(graph::Graph& g, std::vector<Value>& fetches) { Fusion(g, fetches).run(); }

bool fusion_enabled() {
  const char* v = std::getenv("TANDEM_FUSION");
  return !(v && std::strcmp(v, "0") == 0);
}

}  // namespace tandem::compile
