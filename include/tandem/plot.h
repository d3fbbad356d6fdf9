// Pictures of a model and of its training: keras.utils.plot_model, and a report of a History.
#pragma once

#include <string>

#include "tandem/callbacks.h"

namespace tandem {

class Model;

struct PlotModelOptions {
  // Keras 3 defaults both to false; a plot is more useful with them, so here they default on.
  bool show_shapes = true;        // "Output shape: (None, 16)" under each layer
  bool show_dtype = false;        // "dtype: float32"
  bool show_layer_names = true;   // "dense_1 (Dense)"; off: the class alone
  std::string rankdir = "TB";     // "TB" top to bottom, "LR" left to right (also "BT", "RL")
  int dpi = 96;                   // for .png
};

// What plot_model wrote.
struct PlotResult {
  std::string path;       // the picture, or the .dot file when Graphviz is not installed
  bool rendered = false;  // false: only the DOT text was written, `message` says why and what to run
  std::string message;
};

// The model's layer graph in Graphviz's DOT language: one node per layer call and one for the
// input, one edge per input of a call. Under a strategy that places layers (Pipeline, ModelSplit:
// the table summary() prints) each layer is coloured by its stage and device and a legend names them.
std::string model_to_dot(const Model& model, const PlotModelOptions& options = {});

// Writes model_to_dot rendered by Graphviz's `dot` into `path`, in the format its extension names
// (.svg, .png, .pdf; .dot writes the DOT text itself). When `dot` is not on PATH it writes the DOT
// text next to it (model.png -> model.dot), prints one line saying so to standard error and
// returns rendered = false. Files are replaced atomically; a failing `dot` is a tandem::Error
// naming the command and what it printed.
PlotResult plot_model(const Model& model, const std::string& path, const PlotModelOptions& options = {});

// A History as a table, by extension: ".csv" (CSVLogger's layout: "epoch", then every key in
// sorted order, one row per epoch) or ".json" ({"epoch": [...], "history": {key: [...]}}; NaN and
// infinities as null). A History with no epochs is a ValueError.
void write_history(const History& history, const std::string& path);

// A self-contained chart per metric family — loss with val_loss, accuracy with val_accuracy, ... —
// one marker per epoch (numbered from 1, as the progress bar counts), by extension ".svg" or
// ".html" (a page holding the SVG). Non-finite values are left out of the lines.
void plot_history(const History& history, const std::string& path);

}  // namespace tandem
