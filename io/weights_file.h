// Keras 3 `.weights.h5` files: the layout Keras's saving_lib writes, so that Keras and Tandem read
// each other's weights and optimizer state.
//
//   /vars                                  model's own variables (none); attr name = model name
//   /layers/input_layer/vars               Functional models only (Keras lists the InputLayer)
//   /layers/<snake_case(class)>[_N]/vars/<i>   each layer's variables: trainable, then the rest
//   /layers/multi_head_attention/{query,key,value,output}_dense/vars/<i>   (and empty
//       _dropout_layer, _softmax groups), as Keras stores MultiHeadAttention's sublayers
//   /optimizer/vars/<i>                    iteration, learning_rate, then slots in Keras's order
//
// Tandem adds one thing Keras does not: a 512-byte HDF5 user block (HDF5 skips it, and so do h5py
// and Keras) holding the file's size and CRC-32, so that truncated or damaged files are refused
// before HDF5 parses them (io/checksum.h). Model::save writes the same tree under /model_weights of
// its model file (write_weights / read_weights with a root group).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tandem/layer.h"
#include "tandem/optimizers.h"

namespace tandem::io {

class H5File;

// What saving and loading need to know about a model.
struct WeightsModel {
  std::string name;
  bool functional = false;  // Functional models get an empty layers/input_layer group, like Keras
  std::vector<std::string> input_names;  // one such group per input, named after it
  std::vector<std::shared_ptr<Layer>> layers;  // in Keras's order (Model.layers), each layer once
  OptimizerPtr optimizer;   // null when the model is not compiled
  // The trainable weights in the order the optimizer keeps their slots (the order it was built
  // with); empty means the trainable weights of `layers`, in order.
  std::vector<VariablePtr> optimizer_weights;
};

// One `vars` group of the file: `path + "/vars/<i>"` holds variables[i].
struct VarsGroup {
  std::string path;  // "" for the model, "layers/dense_1", "layers/multi_head_attention/query_dense", "optimizer"
  std::string name;  // the group's "name" attribute
  std::vector<VariablePtr> variables;
  std::string owner;  // for messages: `Dense "dense_1"`
  std::string vars_path() const { return path.empty() ? "vars" : path + "/vars"; }
};

// The model's groups (model, layers) in file order, then the optimizer's if `model.optimizer`.
std::vector<VarsGroup> weights_layout(const WeightsModel& model);

// A layer's variables in Keras's layer.weights order: the trainable ones, then the rest.
std::vector<VariablePtr> keras_weight_order(const Layer& layer);

// Keras's naming.to_snake_case: "Conv2D" -> "conv2d", "BatchNormalization" -> "batch_normalization",
// "RMSprop" -> "rm_sprop".
std::string to_snake_case(const std::string& class_name);

struct SaveOptions {
  bool checksum = true;  // false writes the file exactly as h5py would (no user block)
};

// Writes atomically. The path must end in ".weights.h5".
void save_weights(const WeightsModel& model, const std::string& path, const SaveOptions& options = {});

// Checks the whole file against the model first (groups, counts, shapes, dtypes, readable values)
// and changes nothing unless everything matches. Optimizer state is loaded when the model is
// compiled and the file has an optimizer group (the optimizer is built for it if needed).
void load_weights(const WeightsModel& model, const std::string& path);

// The optimizer's vars group for loading a file that stores `stored` optimizer variables: an
// optimizer that has taken no step yet has no slots, so it is built for the model's weights first.
// Throws if the file's optimizer class (`saved_by`, Keras's snake_case name, when the file names
// one) is a known class other than the model's, or if the counts differ; `where` names the group.
VarsGroup optimizer_vars_for_loading(const WeightsModel& model, std::size_t stored, const std::optional<std::string>& saved_by,
                                     const std::string& where);

// Reads the dataset `at` for variable `v` of `owner` after checking that its shape and dtype are
// v's (a step count, `step_count`, may be int32 or int64 as Keras's backends store it). Throws
// naming the file, the dataset and the variable; assigns nothing.
Tensor read_variable(const H5File& file, const std::string& at, const Variable& v, const std::string& owner, bool step_count = false);

// The same tree inside an open file, under the group `root` ("" is the file's root): what
// save_weights writes and load_weights reads, for files that hold more than weights.
void write_weights(H5File& file, const WeightsModel& model, const std::string& root = "");
void read_weights(const H5File& file, const WeightsModel& model, const std::string& root = "");

}  // namespace tandem::io
