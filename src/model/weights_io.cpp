// Model::save_weights and Model::load_weights: the Keras 3 `.weights.h5` format of io/weights_file.
#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "io/weights_file.h"
#include "model/model_impl.h"
#include "tandem/errors.h"

namespace tandem {

namespace {

using Node = Symbol::Node;

// The order of a Keras Functional model's `layers` (keras/src/ops/function.py, map_graph): a
// depth-first walk from the output numbers each layer when first seen; a layer's depth is the
// longest path from it to the output; layers come deepest first, ties in walk order. Files name
// layers by position ("dense", "dense_1") and the optimizer keeps slots in this order, so a
// branched graph must be listed exactly as Keras lists it.
std::vector<std::shared_ptr<Layer>> keras_layer_order(const std::vector<Symbol>& outputs) {
  std::vector<const Node*> post;  // inputs first
  std::map<const Layer*, int> first_seen;
  std::set<const Node*> finished;
  std::function<void(const Node*)> walk = [&](const Node* n) {
    n = n->call_node();  // another output of a call stands for the call
    if (finished.count(n)) return;
    if (n->layer) first_seen.try_emplace(n->layer.get(), static_cast<int>(first_seen.size()));
    for (const Symbol& s : n->inputs) walk(s.node().get());
    finished.insert(n);
    post.push_back(n);
  };
  for (const Symbol& output : outputs) walk(output.node().get());

  std::map<const Node*, int> node_depth;
  std::map<const Layer*, int> layer_depth;
  std::map<const Layer*, std::shared_ptr<Layer>> layers;
  for (auto it = post.rbegin(); it != post.rend(); ++it) {
    const Node* n = *it;
    int depth = node_depth[n];
    if (n->layer) {
      depth = std::max(depth, layer_depth[n->layer.get()]);  // a shared layer takes its deepest call
      layer_depth[n->layer.get()] = depth;
      layers[n->layer.get()] = n->layer;
    }
    node_depth[n] = depth;
    for (const Symbol& s : n->inputs) {
      const Node* in = s.node()->call_node();
      node_depth[in] = std::max(node_depth[in], depth + 1);
    }
  }
  std::vector<std::shared_ptr<Layer>> out;
  for (const auto& [layer, ptr] : layers) out.push_back(ptr);
  std::sort(out.begin(), out.end(), [&](const auto& a, const auto& b) {
    const int da = layer_depth[a.get()], db = layer_depth[b.get()];
    return da != db ? da > db : first_seen[a.get()] < first_seen[b.get()];
  });
  return out;
}

}  // namespace

io::WeightsModel Model::Impl::weights_model(const char* what) const {
  const Impl& m = *this;
  if (m.outputs.empty())
    throw ValueError("Model \"" + m.name + "\": " + what +
                     " needs a built model; give it an InputLayer, call build(), or run it on data first");
  io::WeightsModel w;
  w.name = m.name;
  w.functional = m.class_name == "Functional";
  for (const Symbol& in : m.inputs) w.input_names.push_back(in.node()->input_name);
  w.layers = w.functional ? keras_layer_order(m.outputs) : m.layers;  // Sequential: the chain, as Keras
  if (m.compiled) w.optimizer = m.optimizer;
  for (const VariablePtr& v : m.weights())  // the order the optimizer keeps its slots in
    if (v->trainable()) w.optimizer_weights.push_back(v);
  return w;
}

void Model::save_weights(const std::string& path) {
  impl_->host_view();
  io::save_weights(impl_->weights_model("save_weights"), path);
}

void Model::load_weights(const std::string& path) {
  impl_->host_view();     // the values the file does not hold (a slot of a new optimizer) stay as trained
  impl_->host_changed();  // the next step copies the loaded values to the devices
  io::load_weights(impl_->weights_model("load_weights"), path);
}

}  // namespace tandem
