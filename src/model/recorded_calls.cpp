#include "model/recorded_calls.h"

#include <algorithm>

#include "tandem/errors.h"

namespace tandem::detail {

namespace {
Ref history_ref(const Json& h, const std::string& where) {
  if (!h.is_array() || h.size() < 3 || !h[0].is_string() || !h[1].is_number_integer() || !h[2].is_number_integer())
    throw ValueError(where + ": expected a connection [layer name, node index, tensor index], got " + shorten(h.dump()));
  if (h[2].get<int64_t>() < 0 || h[2].get<int64_t>() > 1000000)
    throw ValueError(where + ": " + shorten(h.dump()) + " has a tensor index out of range (expected 0 or more)");
  return {h[0].get<std::string>(), h[1].get<int>(), h[2].get<int>(), std::nullopt};
}

bool is_keras_tensor(const Json& a) {
  return a.is_object() && a.contains("config") && a.at("config").is_object() && a.at("config").contains("keras_history");
}

Ref tensor_ref(const Json& t, const std::string& where) {
  const Json& config = member(t, "config", where);
  Ref r = history_ref(member(config, "keras_history", where), where);
  if (config.contains("shape") && config.at("shape").is_array()) {
    std::vector<int64_t> dims;
    for (const Json& d : config.at("shape")) dims.push_back(d.is_number_integer() ? d.get<int64_t>() : -1);
    r.shape = Shape(dims);
  }
  return r;
}

// A keyword argument that holds tensors (one, or a list of them): inputs, not a setting.
bool holds_tensors(const Json& value) {
  if (is_keras_tensor(value)) return true;
  return value.is_array() && !value.empty() && std::all_of(value.begin(), value.end(), [](const Json& t) { return is_keras_tensor(t); });
}

// Whether a call argument Keras 3 records with a functional model's call (its "kwargs") leaves
// what Tandem computes unchanged, so that it can be dropped:
//  - "training", null or a boolean: Keras records the layer's default (Dropout's is false), but its
//    functional models pass their own training flag to every layer call that takes one, over the
//    recorded value (keras/src/models/functional.py, operation_fn): true in fit, false in predict
//    and evaluate, as Tandem does;
//  - a mask of null ("mask", which Keras records for every layer whose call takes one, such as
//    BatchNormalization, and MultiHeadAttention's query_mask, value_mask, key_mask and
//    attention_mask): no mask;
//  - "return_attention_scores" false: the layer returns its output alone.
bool neutral_call_argument(const std::string& key, const Json& value) {
  if (key == "training") return value.is_null() || value.is_boolean();
  if (key == "mask" || key.ends_with("_mask")) return value.is_null();
  if (key == "return_attention_scores") return value == false;
  return false;
}
}  // namespace

// The inputs of one call: Keras 3's {"args": [tensor | [tensor, ...], ...], "kwargs": {}} or Keras 2's
// [[name, node, tensor, {kwargs}], ...].
std::vector<Ref> node_refs(const Json& node, const std::string& where) {
  std::vector<Ref> refs;
  if (node.is_array()) {
    for (const Json& h : node) refs.push_back(history_ref(h, where));
  } else {
    const Json& args = member(node, "args", where);
    if (!args.is_array()) throw ValueError(where + ": \"args\" must be a list");
    for (const Json& a : args) {
      if (a.is_array()) {
        for (const Json& t : a) refs.push_back(tensor_ref(t, where));
      } else if (is_keras_tensor(a)) {
        refs.push_back(tensor_ref(a, where));
      } else {
        throw ValueError(where + ": unsupported call argument " + shorten(a.dump()) + " (Tandem layers take only tensors)");
      }
    }
  }
  if (refs.empty()) throw ValueError(where + ": a call without inputs");
  return refs;
}

// The inputs `layer` takes by keyword in one recorded call, appended to its positional ones.
// Keras records the masks a call received ("mask", "query_mask", ...) as the outputs of the ops
// that computed them (`mask_ops`); Tandem computes them again as the model is rebuilt, so they are
// not inputs. A mask taken from anything else is a mask Tandem would not compute: refused.
void add_keyword_refs(const Layer& layer, const Json& node, std::vector<Ref>& refs, const std::string& where,
                      const std::set<std::string>& mask_ops) {
  if (!node.is_object() || !node.contains("kwargs") || !node.at("kwargs").is_object()) return;
  const CallKeywordInputs keyword = layer.keyword_inputs();
  for (const auto& [key, value] : node.at("kwargs").items()) {
    if (!holds_tensors(value)) continue;
    if ((key == "mask" || key.ends_with("_mask")) && key != keyword.keyword) {
      const Json& tensors = is_keras_tensor(value) ? Json::array({value}) : value;
      for (const Json& t : tensors)
        if (!mask_ops.count(tensor_ref(t, where).layer))
          throw ValueError(where + ": the call argument \"" + key + "\" (value " + shorten(value.dump()) +
                           ") is not supported; Tandem computes masks from Embedding(mask_zero=True) and Masking as the model " +
                           "is rebuilt, and accepts a recorded mask only as the output of the op that computed it");
      continue;
    }
    if (keyword.positional < 0 || key != keyword.keyword)
      throw ValueError(where + ": the call argument \"" + key + "\" holds tensors, but " + layer.class_name() + " \"" + layer.name() + "\" " +
                       (keyword.positional < 0 ? std::string("takes no tensors by keyword")
                                               : std::string("takes tensors only under \"").append(keyword.keyword).append("\"")));
    // Attention's key defaults to its value: mha(q, v, attention_mask=m) is mha(q, v, v, attention_mask=m).
    if (layer.class_name() == "MultiHeadAttention" && refs.size() == 2) refs.push_back(refs.back());
    if (refs.size() != static_cast<std::size_t>(keyword.positional))
      throw ValueError(where + ": " + layer.class_name() + " \"" + layer.name() + "\" expected " + std::to_string(keyword.positional) +
                       " positional inputs before \"" + key + "\", got " + std::to_string(refs.size()));
    if (is_keras_tensor(value)) refs.push_back(tensor_ref(value, where));
    else
      for (const Json& t : value) refs.push_back(tensor_ref(t, where));
  }
}

// A layer's config with the call arguments of its recorded calls (Keras 3's "kwargs") moved in:
// Tandem's layers take them at construction, so every call must pass the same values. Neutral
// ones are dropped; any other value would change the result, so it is refused.
Json with_call_arguments(Json config, const Json& nodes, const std::string& where) {
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    if (!nodes[n].is_object() || !nodes[n].contains("kwargs")) continue;
    const Json& kwargs = nodes[n].at("kwargs");
    const std::string at = where + ", inbound_nodes[" + std::to_string(n) + "]";
    if (!kwargs.is_object()) throw ValueError(at + ": \"kwargs\" must be a JSON object, got " + shorten(kwargs.dump()));
    for (const auto& [key, value] : kwargs.items()) {
      if (holds_tensors(value)) continue;  // inputs passed by keyword: read with the call's inputs
      const bool known = std::any_of(std::begin(kCallArguments), std::end(kCallArguments), [&](const char* k) { return key == k; });
      if (!known && neutral_call_argument(key, value)) continue;
      if (!known)
        throw ValueError(at + ": the call argument \"" + key + "\" (value " + shorten(value.dump()) +
                         ") is not supported; Tandem's layers take their inputs and use_causal_mask when called, and accept " +
                         "training (null, true or false: fit and predict decide), masks of null and return_attention_scores false");
      if (config.contains(key) && config.at(key) != value)
        throw ValueError(at + ": the call argument \"" + key + "\" is " + shorten(value.dump()) + " here but " + shorten(config.at(key).dump()) +
                         " in another call; Tandem's layers take it once, at construction");
      config[key] = value;
    }
  }
  return config;
}

std::vector<Ref> endpoints(const Json& config, const char* key) {
  const Json& v = member(config, key, "Functional config");
  const std::string where = std::string("Functional config: ") + key;
  // [[name, 0, 0], ...] or, for one endpoint, [name, 0, 0].
  if (v.is_array() && !v.empty() && v[0].is_string()) return {history_ref(v, where)};
  if (!v.is_array() || v.empty()) throw ValueError(where + ": expected a list of connections [layer name, node index, tensor index], got " + shorten(v.dump()));
  std::vector<Ref> refs;
  for (const Json& h : v) refs.push_back(history_ref(h, where));
  return refs;
}

// Keras 3 records the ops that computed a mask in a functional model (Embedding(mask_zero)'s
// NotEqual, Masking's Any) as entries of their own, which only the "mask" call arguments of later
// layers name. Tandem's layers compute masks themselves, so such entries are skipped.
bool is_mask_op(const Json& entry, const std::string& cls) {
  static const std::set<std::string> kMaskOps = {"NotEqual", "Any", "LogicalAnd", "LogicalOr", "ExpandDims", "Squeeze", "Cast"};
  if (entry.contains("module") && entry.at("module").is_string() && entry.at("module").get<std::string>().starts_with("keras.src.ops"))
    return true;
  return kMaskOps.count(cls) > 0;
}

}  // namespace tandem::detail
