// Normalisation layers, with Keras 3's names, arguments, defaults and weights.
#pragma once

#include <string>

#include "tandem/layer.h"

namespace tandem::layers {

struct BatchNormalizationOptions {
  int axis = -1;           // the channel axis, counted with the batch axis (-1: channels last)
  double momentum = 0.99;  // moving = moving·momentum + batch·(1 − momentum)
  double epsilon = 1e-3;
  bool center = true;      // learn beta
  bool scale = true;       // learn gamma
  Initializer beta_initializer = "zeros";
  Initializer gamma_initializer = "ones";
  Initializer moving_mean_initializer = "zeros";
  Initializer moving_variance_initializer = "ones";
  Regularizer beta_regularizer{};
  Regularizer gamma_regularizer{};
  Constraint beta_constraint{};   // applied after each update
  Constraint gamma_constraint{};
  std::string name{};
};
// Training (fit): normalises with the batch mean and biased variance over every axis but `axis`
// and updates the moving statistics. Inference (evaluate, predict): uses the moving statistics.
// Weights gamma, beta (trainable; absent when scale / center is false), moving_mean,
// moving_variance (non-trainable), all of shape (channels,).
LayerRef BatchNormalization(const BatchNormalizationOptions& options = {});

struct LayerNormalizationOptions {
  int axis = -1;  // only the last axis is supported
  double epsilon = 1e-3;
  bool center = true;
  bool scale = true;
  Initializer beta_initializer = "zeros";
  Initializer gamma_initializer = "ones";
  Regularizer beta_regularizer{};
  Regularizer gamma_regularizer{};
  Constraint beta_constraint{};   // applied after each update
  Constraint gamma_constraint{};
  std::string name{};
};
// Normalises each sample along the last axis: gamma·(x − mean)/sqrt(var + epsilon) + beta, with the
// biased variance; the same in training and inference. Weights gamma, beta of shape (last dim,).
LayerRef LayerNormalization(const LayerNormalizationOptions& options = {});

struct GroupNormalizationOptions {
  int64_t groups = 32;  // channels are split into this many groups; must divide them
  int axis = -1;        // the channel axis, counted with the batch axis
  double epsilon = 1e-3;
  bool center = true;   // learn beta
  bool scale = true;    // learn gamma
  std::string beta_initializer = "zeros";
  std::string gamma_initializer = "ones";
  Regularizer beta_regularizer{};
  Regularizer gamma_regularizer{};
  Constraint beta_constraint{};   // applied after each update
  Constraint gamma_constraint{};
  std::string name{};
};
// Normalises each sample over each group of channels (and every axis but the batch and channel
// ones): gamma·(x − mean)/sqrt(var + epsilon) + beta, with the biased variance; the same in
// training and inference. Weights gamma, beta of shape (channels,).
LayerRef GroupNormalization(const GroupNormalizationOptions& options = {});

}  // namespace tandem::layers
