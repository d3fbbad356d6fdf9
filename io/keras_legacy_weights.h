// Weights in Keras's legacy whole-model `.h5` files (keras.Model.save("m.h5")), which name every
// weight instead of numbering it:
//
//   /model_weights                 attr layer_names: every layer, in the model's order
//   /model_weights/<layer name>    attr weight_names: "<scope>/<layer>/kernel", ..., Keras's layer.weights order
//   /model_weights/<layer name>/<weight name>   the values
//   /optimizer_weights             attr weight_names: "<optimizer>/iteration", "<optimizer>/learning_rate",
//                                  then the slots, in the optimizer's variable order
#pragma once

#include "io/weights_file.h"

namespace tandem::io {

// Whether an open HDF5 file is one of these: Keras writes keras_version at the root, and Tandem's
// own model files have a format marker.
bool is_keras_legacy_model(const H5File& file);

// Reads the layers' weights, and the optimizer state when the model is compiled and the file has
// some, checking everything (names, counts, shapes, dtypes) before assigning anything.
void read_legacy_weights(const H5File& file, const WeightsModel& model);

}  // namespace tandem::io
