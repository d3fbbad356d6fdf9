// Preprocessing layers that are part of the model and save with it (Keras 3's Rescaling,
// Normalization, Resizing, CategoryEncoding) and UpSampling2D, with Keras's names, arguments,
// defaults and configs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tandem/data.h"
#include "tandem/layer.h"
#include "tandem/layers/conv.h"

namespace tandem::layers {

// y = x · scale + offset. Integer inputs become float32 first (Keras casts to the layer's compute
// dtype); float64 inputs stay float64. Layer("rescaling").
LayerRef Rescaling(double scale, double offset = 0.0, const std::string& name = "");

struct NormalizationOptions {
  // The axes (counted with the batch axis, so -1 is the last) that keep a mean and variance per
  // index; the others are averaged over. Empty: one mean and variance for every value (Keras's
  // axis=None). The batch axis 0 cannot be kept.
  std::vector<int64_t> axis = {-1};
  // Fixed statistics (Keras's mean= and variance=): one value each, or one per index of the last
  // kept axis, or one per element of the kept axes (row-major). Empty: the layer has weights
  // mean, variance and count that adapt() sets (and that are saved).
  std::vector<double> mean{}, variance{};
  bool invert = false;  // x · sqrt(variance) + mean instead of (x − mean) / sqrt(variance)
  std::string name{};
};

// A Normalization layer with adapt(), as keras.layers.Normalization.
class NormalizationRef : public LayerRef {
 public:
  using LayerRef::LayerRef;
  // Sets the mean and (biased) variance over every axis but the kept ones from `data` (rows first,
  // any numeric dtype); builds the layer for rows of that shape if it is not built yet. The
  // statistics are computed in float64 and stored in the layer's dtype.
  void adapt(const Tensor& data) const;
  // The same over a dataset's first input (its row map applied, when it has one).
  void adapt(const Dataset& data) const;
};

// (x − mean) / max(sqrt(variance), 1e-7), or x · max(sqrt(variance), 1e-7) + mean when inverted,
// with mean and variance broadcast along the kept axes. Integer inputs become float32.
NormalizationRef Normalization(const NormalizationOptions& options = {});

struct ResizingOptions {
  std::string interpolation = "bilinear";  // "bilinear" or "nearest"
  // Crop the largest centred window of the target's aspect ratio first (no distortion).
  bool crop_to_aspect_ratio = false;
  // Or pad the image with fill_value to the target's aspect ratio first (equal bands on both sides).
  bool pad_to_aspect_ratio = false;
  std::string fill_mode = "constant";  // the only mode Keras's resize accepts
  double fill_value = 0.0;
  std::string name{};
};
// Resizes channels-last images (batch, height, width, channels) to (height, width) as Keras 3 on
// JAX does (jax.image.resize without antialiasing): half-pixel centres; bilinear clamps at the
// border; nearest takes the input pixel floor((o + 0.5) · in / out).
LayerRef Resizing(int64_t height, int64_t width, const ResizingOptions& options = {});

struct UpSampling2DOptions {
  std::string interpolation = "nearest";  // "nearest" (each pixel repeated) or "bilinear"
  std::string name{};
};
// Enlarges images by whole factors: (batch, h, w, c) -> (batch, h · size.h, w · size.w, c).
LayerRef UpSampling2D(Int2 size = 2, const UpSampling2DOptions& options = {});

struct CategoryEncodingOptions {
  // "one_hot": ids (batch, ...) -> (batch, ..., num_tokens) (a last axis of 1 is dropped first);
  // "multi_hot": ids (batch, n) -> (batch, num_tokens), 1 where an id occurs; "count": how often.
  std::string output_mode = "multi_hot";
  bool sparse = false;  // Keras's sparse outputs; Tandem has dense tensors only (false)
  std::string name{};
};
// Integer ids in [0, num_tokens) to dense float32 encodings. An id outside the range adds nothing
// (a row of zeros), as Keras on JAX computes it; float ids are cast to int32 first.
LayerRef CategoryEncoding(int64_t num_tokens, const CategoryEncodingOptions& options = {});

}  // namespace tandem::layers

namespace tandem::layers {

struct IntegerLookupOptions {
  int64_t max_tokens = 0;       // the largest vocabulary, special indices included; 0: no limit (Keras's None)
  int64_t num_oov_indices = 1;  // ids for values outside the vocabulary; with several, value mod n picks one
  std::optional<int64_t> mask_token{};  // a value that maps to index 0 ("int" output), or is dropped
  int64_t oov_token = -1;               // what the inverted layer gives for an unknown index
  // The vocabulary, in index order (it may start with the special tokens, as get_vocabulary gives
  // them). Empty: set by adapt().
  std::vector<int64_t> vocabulary{};
  bool invert = false;               // indices back to values ("int" output only)
  std::string output_mode = "int";   // "int" (int64 indices), "one_hot", "multi_hot" or "count"
  bool pad_to_max_tokens = false;    // encodings of max_tokens values instead of the vocabulary's size
  std::string name{};
};

// IntegerLookup with adapt() and the vocabulary's accessors, as keras.layers.IntegerLookup.
class IntegerLookupRef : public LayerRef {
 public:
  using LayerRef::LayerRef;
  // Learns the vocabulary from every value of `data` (integers): the values by descending count,
  // ties by descending value, the mask and OOV tokens left out, cut to fit max_tokens. Call it before
  // the layer is used in a model.
  void adapt(const Tensor& data) const;
  // The special tokens (the mask token, then oov_token once per OOV index), then the vocabulary:
  // the value of index i is get_vocabulary()[i].
  std::vector<int64_t> get_vocabulary(bool include_special_tokens = true) const;
  int64_t vocabulary_size() const;
};

// Integer values to indices into a vocabulary (or, inverted, indices back to values), as Keras 3's
// IntegerLookup computes them: index 0 the mask token when there is one ("int" output), then the
// OOV indices, then the vocabulary. "int" output is int64; the encodings are float32 as
// CategoryEncoding's. The vocabulary is written into the saved config.
IntegerLookupRef IntegerLookup(const IntegerLookupOptions& options = {});

}  // namespace tandem::layers
