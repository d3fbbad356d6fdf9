// Whole-model files: Model::save writes one, load_model rebuilds the model from it. docs/saving.md
// describes the file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tandem/model.h"

namespace tandem {

// Rebuilds a model saved with Model::save: its layers from their configs, connected as they were
// (a Sequential in order, a functional model by its recorded calls), compiled as it was (optimizer,
// loss and metrics; the distribution strategy is not saved, the loaded model uses Default), with its
// weights, optimizer state (step count, learning rate, slots) and training state. It also sets the
// global random state (set_random_seed) back to what it was at the save, so that a fit started
// after loading draws the same shuffles as one started after the save would have: training
// continues exactly, in this process or another one.
// Throws tandem::Error (ValueError, ShapeError) naming the file and the problem for a file that is
// missing, not HDF5, truncated or damaged, not a model file, or whose config names an unknown layer
// class or does not fit its weights; then nothing is returned and the random state is unchanged.
std::unique_ptr<Model> load_model(const std::string& path);

// What a model file records about training so far. A model saved after fit returned records the
// next epoch and batch 0: pass `epoch` as FitOptions::initial_epoch to continue. A model saved during
// fit (from a callback) records the epoch being run and how many of its batches had finished (in
// on_epoch_end, all of them: continue at epoch + 1).
struct TrainingState {
  int epoch = 0;
  int64_t batch = 0;
  int64_t iterations = 0;    // optimizer steps taken (0 when the model was not compiled)
  double learning_rate = 0;  // the optimizer's, when saved (0 when the model was not compiled)
  uint64_t seed = 0;         // the global random state: the seed (set_random_seed)
  uint64_t seeds_drawn = 0;  //   and how many seeds had been drawn from it
};

// Reads only the training state of a file written by Model::save (checking the file as load_model does).
TrainingState load_training_state(const std::string& path);

}  // namespace tandem
