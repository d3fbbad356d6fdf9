// Sources that read files as training goes (tandem::Source, data_source.h): image folders decoded
// lazily, HDF5 arrays read by rows, CSV records parsed on demand and samples in tar shards (the
// WebDataset layout); and a writer that turns a data set into such shards. Each source lists or
// indexes its files once when made and reads one sample per read() call, from any number of
// threads at once; a sample that cannot be read raises DataError naming the file (and the member
// of a shard or the line of a CSV file).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tandem/augmentation.h"
#include "tandem/data.h"
#include "tandem/data_files.h"
#include "tandem/data_source.h"

namespace tandem::datasets {

// ---- Image folders: image_dataset_from_directory's files, decoded when read ----

// The files of image_dataset_from_directory(directory, options), in its order and split, as two
// sources whose samples equal that function's rows bit for bit: x float32 (height, width,
// channels), y int32 () or float32 (classes) with label_mode "categorical".
struct ImageFolderSources {
  std::shared_ptr<Source> training;
  std::shared_ptr<Source> validation;  // null when validation_split is 0
  std::vector<std::string> class_names;
};
ImageFolderSources image_folder_source(const std::string& directory, const ImageDirectoryOptions& options = {});

// ---- HDF5: two datasets of one file, read a few rows at a time ----

struct Hdf5SourceOptions {
  std::string x_dataset = "x", y_dataset = "y";
  // Rows read from the file at once; the last few blocks read are kept for the next reads, so
  // sequential and nearby reads touch the file once per block (a shuffled order gains little).
  // 0: as many rows as fit in about 1 MiB; 1: one row per read.
  int64_t block_rows = 0;
  int64_t cached_blocks = 4;
};
// The rows of from_hdf5(path, x_dataset, y_dataset), with the same dtypes (uint8 as float32 for x
// and int32 for y), read by hyperslab when asked for.
std::shared_ptr<Source> hdf5_source(const std::string& path, const Hdf5SourceOptions& options = {});

// ---- CSV: records indexed once, parsed when read ----

// The rows of from_csv(path, options): one pass when made records where each record starts (and
// checks every record's field count and, without label_dtype, reads the labels to choose int32 or
// float32, as from_csv does); read() parses one record from the file.
std::shared_ptr<Source> csv_source(const std::string& path, const CsvOptions& options = {});

// ---- Tar shards (WebDataset): one tar per shard, a sample's files sharing a key ----

// A sample is the run of consecutive members whose names share a key: the member's base name up
// to its first dot ("train/000123.png" and "train/000123.cls" are sample "train/000123").
struct TarShardsOptions {
  int64_t image_height = 256, image_width = 256;  // every image is resized to this, as image_dataset_from_directory does
  std::string color_mode = "rgb";                 // "rgb", "grayscale" or "rgba"
  std::vector<std::string> image_extensions{"png", "jpg", "jpeg"};  // the member holding x: the first present
  std::string label_extension = "cls";  // the member holding y: a decimal class id (text, as WebDataset writes .cls)
  std::string label_mode = "int";       // "int": int32 (); "categorical": float32 one-hot (num_classes)
  int64_t num_classes = 0;              // needed by "categorical"; otherwise, when > 0, ids are checked against it
};
// The samples of the shards in the order given, each shard's in its member order. Each shard is
// indexed once (member names, offsets and sizes: libarchive reads the headers) and read() reads
// one sample's members by offset. Errors: a missing shard, one that is not a tar, a truncated one
// (a member's data or the end-of-archive blocks past the file's end), a sample without its image
// or label member, a corrupt image or an unreadable label: DataError naming the shard and member.
std::shared_ptr<Source> tar_shards_source(const std::vector<std::string>& shards, const TarShardsOptions& options = {});
// The same with the shards named by a brace range, as WebDataset writes them:
// "data/train-{000000..000009}.tar" is ten shards (the numbers keep the first one's width).
std::shared_ptr<Source> tar_shards_source(const std::string& pattern, const TarShardsOptions& options = {});
std::vector<std::string> expand_shard_pattern(const std::string& pattern);

// ---- Writing shards ----

struct ShardWriterOptions {
  int64_t samples_per_shard = 10000;
  // Each sample is written `copies` times: copy 0 as it is, the others through `augment` (applied
  // in order), seeded from (seed, sample, copy). Makes a larger data set out of a small one.
  int64_t copies = 1;
  std::vector<RowTransform> augment{};
  uint64_t seed = 0;
  // Pixels are round(x · pixel_scale) clamped to 0..255, stored as 8-bit PNG: 255 for images in
  // [0, 1] (fashion_mnist's), 1 for images in 0..255 (image_dataset_from_directory's).
  double pixel_scale = 255.0;
  // Images are resized to this before they are stored (bilinear, as the readers resize); 0: kept
  // at their own size. Larger images make a data set of some size out of fewer samples.
  int64_t image_height = 0, image_width = 0;
};
// Writes images x (N, height, width) or (N, height, width, channels 1, 3 or 4) with int32 class ids
// y (N,) as shards named by `pattern`'s printf field ("out/train-%06d.tar"): members
// "<sample index, 9 digits>.png" and ".cls". Returns the shards' paths.
std::vector<std::string> write_tar_shards(const Dataset& data, const std::string& pattern, const ShardWriterOptions& options = {});
// Writes an image folder's files (class subfolders, taken in image_dataset_from_directory's order
// with `listing`'s class_names, shuffle and seed) into shards as they are, without decoding:
// "<index>.<png|jpg|jpeg>" and "<index>.cls". Returns the shards' paths.
std::vector<std::string> write_image_folder_shards(const std::string& directory, const std::string& pattern,
                                                   const ImageDirectoryOptions& listing = {}, int64_t samples_per_shard = 10000);

}  // namespace tandem::datasets
