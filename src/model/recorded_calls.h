// How Keras 3 records the calls of a functional model's layers in its config (each layer's
// "inbound_nodes": the inputs as [layer name, node index, tensor index], the call's keyword
// arguments), read back into the inputs and constructor arguments of Tandem's layers.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/config_json.h"
#include "tandem/layer.h"

namespace tandem::detail {

// Keras's config of a layer argument that its call takes instead of its constructor.
inline constexpr const char* kCallArguments[] = {"use_causal_mask"};

// One input of a recorded call: [layer name, node index, tensor index], and the shape it had.
struct Ref {
  std::string layer;
  int node = 0;
  int tensor = 0;  // which output of the call
  std::optional<Shape> shape;
  std::string str() const {
    return std::string("[\"").append(layer).append("\", ").append(std::to_string(node)).append(", ").append(std::to_string(tensor)).append("]");
  }
};

// The inputs of one call: Keras 3's {"args": [tensor | [tensor, ...], ...], "kwargs": {}} or Keras 2's
// [[name, node, tensor, {kwargs}], ...].
std::vector<Ref> node_refs(const Json& node, const std::string& where);

// Appends to `refs` the inputs `layer` takes by keyword in one recorded call. Keras records the
// masks a call received ("mask", "query_mask", ...) as the outputs of the ops that computed them
// (`mask_ops`); Tandem computes them again as the model is rebuilt, so they are not inputs.
void add_keyword_refs(const Layer& layer, const Json& node, std::vector<Ref>& refs, const std::string& where,
                      const std::set<std::string>& mask_ops);

// A layer's config with the call arguments of its recorded calls moved in (Tandem's layers take
// them at construction); neutral ones are dropped, any other that differs between calls refused.
Json with_call_arguments(Json config, const Json& nodes, const std::string& where);

// The model's "input_layers" or "output_layers": [[name, 0, 0], ...] or one [name, 0, 0].
std::vector<Ref> endpoints(const Json& config, const char* key);

// Whether an entry is one of the ops Keras records for computing a mask (Embedding(mask_zero)'s
// NotEqual, Masking's Any, ...): Tandem's layers compute masks themselves, so it is skipped.
bool is_mask_op(const Json& entry, const std::string& cls);

}  // namespace tandem::detail
