// The listing and per-image decoding shared by image_dataset_from_directory and the lazy image
// sources (image_files.h).
#include "data/image_files.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "tandem/errors.h"

namespace tandem::data {
namespace {
namespace fs = std::filesystem;

std::vector<std::string> subfolders(const std::string& directory) {
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(directory))
    if (e.is_directory()) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<ImageFile> list_files(const std::string& directory, const std::vector<std::string>& classes, const std::string& who) {
  std::vector<ImageFile> files;
  for (std::size_t c = 0; c < classes.size(); ++c) {
    const fs::path folder = fs::path(directory) / classes[c];
    if (!fs::is_directory(folder)) throw ValueError(who + ": class \"" + classes[c] + "\" has no folder " + folder.string());
    std::vector<std::string> names;
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(folder))
      if (e.is_regular_file() && io::is_supported_image_name(e.path().string())) names.push_back(e.path().string());
    std::sort(names.begin(), names.end());
    for (std::string& n : names) files.push_back({std::move(n), static_cast<int32_t>(c)});
  }
  return files;
}

// A Fisher-Yates shuffle with 64-bit Mersenne Twister draws: the same order on every platform
// (std::shuffle's algorithm is the library's choice).
void shuffle_files(std::vector<ImageFile>& files, uint64_t seed) {
  std::mt19937_64 gen(seed);
  for (std::size_t i = files.size(); i > 1; --i) std::swap(files[i - 1], files[static_cast<std::size_t>(gen() % i)]);
}

// An image's 8-bit values as floats, written to `out`.
void to_floats(const io::ImagePixels& image, float* out) {
  const uint8_t* in = image.values.data();
  for (std::size_t i = 0, n = image.values.size(); i < n; ++i) out[i] = in[i];
}

// tf.image.resize's bilinear sampling (half-pixel centres, antialias off): output index i reads
// input position (i + 0.5) · in/out − 0.5, between its floor and the next pixel, both clamped.
struct Taps {
  std::vector<int64_t> low, high;
  std::vector<float> frac;
};
Taps taps(int64_t out_size, int64_t in_size) {
  Taps t;
  const double scale = double(in_size) / double(out_size);
  for (int64_t i = 0; i < out_size; ++i) {
    const double src = (double(i) + 0.5) * scale - 0.5;
    const double low = std::floor(src);
    t.low.push_back(std::clamp<int64_t>(static_cast<int64_t>(low), 0, in_size - 1));
    t.high.push_back(std::clamp<int64_t>(static_cast<int64_t>(low) + 1, 0, in_size - 1));
    t.frac.push_back(static_cast<float>(src - low));
  }
  return t;
}

void resize_into(const float* in, int64_t in_h, int64_t in_w, int64_t channels, int64_t out_h, int64_t out_w,
                 float* out) {
  const Taps ty = taps(out_h, in_h), tx = taps(out_w, in_w);
  auto at = [&](int64_t y, int64_t x, int64_t c) { return in[static_cast<std::size_t>((y * in_w + x) * channels + c)]; };
  for (int64_t y = 0; y < out_h; ++y) {
    const auto iy = static_cast<std::size_t>(y);
    for (int64_t x = 0; x < out_w; ++x) {
      const auto ix = static_cast<std::size_t>(x);
      for (int64_t c = 0; c < channels; ++c) {
        const float top = at(ty.low[iy], tx.low[ix], c) * (1 - tx.frac[ix]) + at(ty.low[iy], tx.high[ix], c) * tx.frac[ix];
        const float bottom = at(ty.high[iy], tx.low[ix], c) * (1 - tx.frac[ix]) + at(ty.high[iy], tx.high[ix], c) * tx.frac[ix];
        *out++ = top * (1 - ty.frac[iy]) + bottom * ty.frac[iy];
      }
    }
  }
}
}  // namespace

int64_t channels_of(const std::string& color_mode, const std::string& who) {
  if (color_mode == "rgb") return 3;
  if (color_mode == "grayscale") return 1;
  if (color_mode == "rgba") return 4;
  throw ValueError(who + ": color_mode must be \"rgb\", \"grayscale\" or \"rgba\", got \"" + color_mode + "\"");
}

ImageListing list_image_directory(const std::string& directory, const datasets::ImageDirectoryOptions& o, const std::string& who) {
  if (!fs::is_directory(directory)) throw ValueError(who + ": not a folder");
  ImageListing result;
  result.channels = channels_of(o.color_mode, who);
  if (o.label_mode != "int" && o.label_mode != "categorical")
    throw ValueError(who + ": label_mode must be \"int\" or \"categorical\", got \"" + o.label_mode + "\"");
  if (o.image_height < 1 || o.image_width < 1)
    throw ValueError(who + ": image_height and image_width must be positive, got " + std::to_string(o.image_height) + " x " +
                     std::to_string(o.image_width));
  if (!(o.validation_split >= 0.0 && o.validation_split < 1.0))
    throw ValueError(who + ": validation_split must be in [0, 1), got " + std::to_string(o.validation_split));
  result.class_names = o.class_names.empty() ? subfolders(directory) : o.class_names;
  if (result.class_names.empty()) throw ValueError(who + ": no class subfolders");
  result.files = list_files(directory, result.class_names, who);
  if (result.files.empty()) throw ValueError(who + ": no .png, .jpg or .jpeg files in its class subfolders");
  if (o.shuffle) shuffle_files(result.files, o.seed);
  // Keras: the validation subset is the last int(split · N) files, training the rest.
  const auto validation = static_cast<std::size_t>(o.validation_split * double(result.files.size()));
  result.training = result.files.size() - validation;
  if (o.validation_split > 0 && (validation == 0 || result.training == 0))
    throw ValueError(who + ": validation_split " + std::to_string(o.validation_split) + " of " + std::to_string(result.files.size()) +
                     " files leaves " + std::to_string(result.training) + " for training and " + std::to_string(validation) +
                     " for validation; each needs at least 1");
  return result;
}

void image_to_row(const io::ImagePixels& image, int64_t height, int64_t width, float* out) {
  // Resizing to the image's own size samples every pixel at its centre with weight 1 (the
  // neighbour's weight is 0), so it is the identity, bit for bit: skip it.
  if (image.height == height && image.width == width) return to_floats(image, out);
  std::vector<float> pixels(image.values.size());
  to_floats(image, pixels.data());
  resize_into(pixels.data(), image.height, image.width, image.channels, height, width, out);
}

void resize_row(const float* in, int64_t in_h, int64_t in_w, int64_t channels, int64_t out_h, int64_t out_w, float* out) {
  resize_into(in, in_h, in_w, channels, out_h, out_w, out);
}

SampleType image_sample_type(int64_t height, int64_t width, int64_t channels, int64_t one_hot_classes) {
  SampleType t;
  t.x.push_back({Shape{height, width, channels}, DType::F32});
  t.y.push_back(one_hot_classes > 0 ? TensorType{Shape{one_hot_classes}, DType::F32} : TensorType{Shape{}, DType::I32});
  return t;
}

void write_label(int32_t label, bool one_hot, std::size_t classes, std::byte* out) {
  if (!one_hot) {
    std::memcpy(out, &label, sizeof label);
    return;
  }
  std::vector<float> row(classes, 0.f);
  row.at(static_cast<std::size_t>(label)) = 1.f;
  std::memcpy(out, row.data(), classes * sizeof(float));
}

}  // namespace tandem::data
