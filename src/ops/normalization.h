// Graph-building functions for the normalisation ops: batch normalisation (training and inference),
// layer normalisation, and the in-place moving-average update of BatchNormalization's statistics.
#pragma once

#include "graph/op_registry.h"

namespace tandem::ops {

struct BatchNormTrainResult {
  Value y;         // the normalised, scaled and shifted input
  Value mean;      // (channels,): the batch mean
  Value variance;  // (channels,): the biased batch variance (divided by the element count)
};

// Normalises x with its own statistics over every axis but `axis` (the channel axis):
// y = gamma·(x − mean)/sqrt(var + epsilon) + beta, with gamma and beta of shape (channels,).
BatchNormTrainResult batch_norm_train(Graph& g, Value x, Value gamma, Value beta, int axis, double epsilon);
// The same with given statistics (the moving ones); no gradient flows to `mean` and `variance`.
Value batch_norm_infer(Graph& g, Value x, Value gamma, Value beta, Value mean, Value variance, int axis,
                       double epsilon);
// Normalises each vector along the last axis: y = gamma·(x − mean)/sqrt(var + epsilon) + beta,
// with the biased variance and gamma, beta of shape (last dimension,).
Value layer_norm(Graph& g, Value x, Value gamma, Value beta, double epsilon);
// variable = variable·momentum + value·(1 − momentum), in place. Emitted in the Update phase, so it
// runs after every forward and backward node that reads the variable.
void assign_moving_average(Graph& g, Value variable, Value value, double momentum);

}  // namespace tandem::ops
