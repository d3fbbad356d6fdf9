// What image_dataset_from_directory and the lazy image sources share: the folder's file listing
// (Keras's class order, sorted files, seeded shuffle, validation split) and one image's decoding
// into a float row (channels, then tf.image.resize's bilinear resize). Sharing them is what makes
// a streamed image equal, bit for bit, to the same image loaded in memory.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "io/image_file.h"
#include "tandem/data_files.h"
#include "tandem/data_source.h"

namespace tandem::data {

struct ImageFile {
  std::string path;
  int32_t label;
};

// A folder's image files in Keras's order, split into training (the first `training`) and
// validation (the rest). Checks the options; errors start with `who`.
struct ImageListing {
  std::vector<ImageFile> files;
  std::size_t training = 0;
  std::vector<std::string> class_names;
  int64_t channels = 3;
};
ImageListing list_image_directory(const std::string& directory, const datasets::ImageDirectoryOptions& options,
                                  const std::string& who);

// The channel count of a color mode ("rgb" 3, "grayscale" 1, "rgba" 4); ValueError naming `who`.
int64_t channels_of(const std::string& color_mode, const std::string& who);

// One decoded image (io::decode_image with the dataset's channels) resized to height × width, into
// `out` (height · width · channels floats, values 0..255).
void image_to_row(const io::ImagePixels& image, int64_t height, int64_t width, float* out);

// Resizes an image of floats (in_h × in_w × channels) to out_h × out_w with the same bilinear
// sampling, into `out`.
void resize_row(const float* in, int64_t in_h, int64_t in_w, int64_t channels, int64_t out_h, int64_t out_w, float* out);

// An image sample's type: x float32 (height, width, channels); y an int32 class id, or a float32
// one-hot row of `one_hot_classes` values when that is > 0.
SampleType image_sample_type(int64_t height, int64_t width, int64_t channels, int64_t one_hot_classes);

// A label as image_dataset_from_directory writes it: an int32 class id ("int") or a float32
// one-hot row of `classes` values ("categorical").
void write_label(int32_t label, bool one_hot, std::size_t classes, std::byte* out);

}  // namespace tandem::data
