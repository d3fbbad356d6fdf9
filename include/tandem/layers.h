// The built-in layers, with Keras 3's names, arguments and defaults.
#pragma once

#include <string>

#include "tandem/layer.h"
#include "tandem/regularizers.h"

namespace tandem::layers {

struct DenseOptions {
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  Regularizer kernel_regularizer{};
  Regularizer bias_regularizer{};
  Regularizer activity_regularizer{};  // of the output, divided by the batch size
  Constraint kernel_constraint{};      // applied after each update
  Constraint bias_constraint{};
  std::string name{};
};
// y = activation(x · kernel + bias); kernel (in, units), bias (units). activation "" = linear.
LayerRef Dense(int64_t units, const std::string& activation = "", const DenseOptions& options = {});

LayerRef Flatten(const std::string& name = "");
// Reshapes each sample (batch excluded); one dimension may be -1.
LayerRef Reshape(Shape target_shape, const std::string& name = "");
// Any of Keras 3's activation names Tandem has: "relu", "sigmoid", "tanh", "gelu", "softmax",
// "silu" ("swish"), "elu", "selu", "mish", ... (docs/activations.md lists them).
LayerRef Activation(const std::string& activation, const std::string& name = "");
// Inverted dropout during training; identity in evaluate and predict.
LayerRef Dropout(double rate, const std::string& name = "");
// The first element of a Sequential that fixes its input shape (batch excluded).
LayerRef InputLayer(Shape shape, const std::string& name = "");

}  // namespace tandem::layers

#include "tandem/layers/activations.h"
#include "tandem/layers/attention.h"
#include "tandem/layers/augmentation.h"
#include "tandem/layers/conv.h"
#include "tandem/layers/lambda.h"
#include "tandem/layers/normalization.h"
#include "tandem/layers/preprocessing.h"
#include "tandem/layers/recurrent.h"
