// datasets::write_tar_shards and write_image_folder_shards: data sets as WebDataset tar shards
// (io/tar_file.h), members "<key>.png" (or the image file's own extension) and "<key>.cls".
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>

#include "core/random.h"
#include "data/image_files.h"
#include "io/atomic_file.h"
#include "io/png_encode.h"
#include "io/tar_file.h"
#include "tandem/data_sources.h"
#include "tandem/errors.h"

namespace tandem::datasets {
namespace {

// `pattern` with its one printf integer field ("%d", "%06d") replaced by `n`.
std::string shard_name(const std::string& pattern, int64_t n, const std::string& who) {
  const std::size_t at = pattern.find('%');
  std::size_t end = at == std::string::npos ? at : at + 1;
  while (end != std::string::npos && end < pattern.size() && std::isdigit(static_cast<unsigned char>(pattern[end]))) ++end;
  const bool zero_padded_or_plain = end == at + 1 || pattern[at + 1] == '0';
  if (at == std::string::npos || end >= pattern.size() || pattern[end] != 'd' || pattern.find('%', end) != std::string::npos ||
      !zero_padded_or_plain)
    throw ValueError(who + ": the shard pattern \"" + pattern + "\" needs one field %d or %0Nd for the shard number (\"train-%06d.tar\")");
  const std::size_t width = end > at + 1 ? static_cast<std::size_t>(std::stoul(pattern.substr(at + 1, end - at - 1))) : 0;
  std::string digits = std::to_string(n);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return pattern.substr(0, at) + digits + pattern.substr(end + 1);
}

std::string sample_key(int64_t index) {
  std::string key = std::to_string(index);
  if (key.size() < 9) key.insert(0, 9 - key.size(), '0');
  return key;
}

std::span<const uint8_t> bytes_of(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

// Writes `count` samples as shards of `per_shard` each; `add(writer, sample)` writes one sample's members.
std::vector<std::string> write_shards(const std::string& pattern, int64_t count, int64_t per_shard, const std::string& who,
                                      const std::function<void(io::TarWriter&, int64_t)>& add) {
  if (per_shard < 1) throw ValueError(who + ": samples_per_shard must be positive, got " + std::to_string(per_shard));
  shard_name(pattern, 0, who);  // checks the pattern before anything is written
  std::vector<std::string> paths;
  for (int64_t first = 0, s = 0; first < count; first += per_shard, ++s) {
    const std::string path = shard_name(pattern, s, who);
    const std::filesystem::path folder = std::filesystem::path(path).parent_path();
    if (!folder.empty()) io::create_folders(folder.string(), who);
    // Written under a temporary name and renamed: a reader never sees half a shard.
    io::write_atomically(path, [&](const std::string& temp) {
      io::TarWriter writer(temp);
      for (int64_t i = first; i < std::min(count, first + per_shard); ++i) add(writer, i);
      writer.close();
    });
    paths.push_back(path);
  }
  return paths;
}

}  // namespace

std::vector<std::string> write_tar_shards(const Dataset& data, const std::string& pattern, const ShardWriterOptions& o) {
  const std::string who = "write_tar_shards(\"" + pattern + "\")";
  const Tensor& x = data.x();
  const Tensor& y = data.y();
  const Shape& s = x.shape();
  if (x.dtype() != DType::F32 || (s.rank() != 3 && s.rank() != 4) || (s.rank() == 4 && s[3] != 1 && s[3] != 3 && s[3] != 4))
    throw ValueError(who + ": x must be float32 images (N, height, width) or (N, height, width, 1, 3 or 4 channels), got " +
                     s.str());
  if (y.shape().rank() != 1 && !(y.shape().rank() == 2 && y.shape()[1] == 1))
    throw ValueError(who + ": y must hold one class id per image, shape (N,) or (N, 1), got " + y.shape().str());
  if (o.copies < 1) throw ValueError(who + ": copies must be positive, got " + std::to_string(o.copies));
  if (o.image_height < 0 || o.image_width < 0 || (o.image_height == 0) != (o.image_width == 0))
    throw ValueError(who + ": image_height and image_width must both be positive (resize) or both 0 (keep), got " +
                     std::to_string(o.image_height) + " x " + std::to_string(o.image_width));
  const int64_t height = s[1], width = s[2], channels = s.rank() == 4 ? s[3] : 1;
  const int64_t out_h = o.image_height ? o.image_height : height, out_w = o.image_width ? o.image_width : width;
  const Shape row_shape{height, width, channels};
  const auto values = static_cast<std::size_t>(height * width * channels);
  std::vector<float> row(values), resized(static_cast<std::size_t>(out_h * out_w * channels));
  std::vector<uint8_t> pixels(resized.size());
  return write_shards(pattern, data.size() * o.copies, o.samples_per_shard, who, [&](io::TarWriter& w, int64_t out) {
    const int64_t i = out / o.copies, copy = out % o.copies;
    std::copy_n(x.data<float>() + i * static_cast<int64_t>(values), values, row.begin());
    if (copy > 0) {
      std::mt19937_64 random(rng::hash(o.seed, 0x7368617264ull /* "shard" */, static_cast<uint64_t>(i), static_cast<uint64_t>(copy)));
      for (const RowTransform& t : o.augment) t(row, row_shape, random);
    }
    const std::vector<float>* image = &row;
    if (out_h != height || out_w != width) {
      data::resize_row(row.data(), height, width, channels, out_h, out_w, resized.data());
      image = &resized;
    }
    for (std::size_t v = 0; v < pixels.size(); ++v)
      pixels[v] = static_cast<uint8_t>(std::clamp(std::nearbyint(double((*image)[v]) * o.pixel_scale), 0.0, 255.0));
    const double id = y.item(i);
    if (id != std::floor(id) || id < 0)
      throw ValueError(who + ": y[" + std::to_string(i) + "] = " + std::to_string(id) + " is not a class id (a non-negative integer)");
    const std::string key = sample_key(out);
    w.add(key + ".png", bytes_of(io::encode_png(out_h, out_w, static_cast<int>(channels), pixels)));
    w.add(key + ".cls", bytes_of(std::to_string(static_cast<int64_t>(id))));
  });
}

std::vector<std::string> write_image_folder_shards(const std::string& directory, const std::string& pattern,
                                                   const ImageDirectoryOptions& listing, int64_t samples_per_shard) {
  const std::string who = "write_image_folder_shards(\"" + directory + "\")";
  ImageDirectoryOptions o = listing;
  o.validation_split = 0;  // every file is written
  const data::ImageListing files = data::list_image_directory(directory, o, who);
  return write_shards(pattern, static_cast<int64_t>(files.files.size()), samples_per_shard, who, [&](io::TarWriter& w, int64_t i) {
    const data::ImageFile& f = files.files[static_cast<std::size_t>(i)];
    std::ifstream in(f.path, std::ios::binary);
    if (!in) throw DataError(f.path, who + ": cannot open " + f.path);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw DataError(f.path, who + ": cannot read " + f.path);
    std::string ext = std::filesystem::path(f.path).extension().string().substr(1);
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const std::string key = sample_key(i);
    w.add(key + "." + ext, bytes_of(bytes));
    w.add(key + ".cls", bytes_of(std::to_string(f.label)));
  });
}

}  // namespace tandem::datasets
