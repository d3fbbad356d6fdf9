// datasets::image_folder_source: image_dataset_from_directory's files (data/image_files.h) as a
// Source that decodes and resizes one image per read(), so the folder may exceed memory.
#include <cstring>

#include "data/image_files.h"
#include "data/read_check.h"
#include "tandem/data_sources.h"
#include "tandem/errors.h"

namespace tandem::datasets {
namespace {

class ImageFolderSource final : public Source {
 public:
  ImageFolderSource(std::string directory, std::vector<data::ImageFile> files, const ImageDirectoryOptions& o, int64_t channels,
                    std::size_t classes, const char* subset)
      : directory_(std::move(directory)), files_(std::move(files)), o_(o), channels_(channels), classes_(classes), subset_(subset) {}

  int64_t size() const override { return static_cast<int64_t>(files_.size()); }

  SampleType sample_type() const override {
    return data::image_sample_type(o_.image_height, o_.image_width, channels_, one_hot() ? static_cast<int64_t>(classes_) : 0);
  }

  void read(int64_t index, std::span<std::byte* const> out) const override {
    data::check_read(*this, index, out.size(), 2);
    const data::ImageFile& file = files_[static_cast<std::size_t>(index)];
    thread_local io::ImagePixels image;  // each decoding thread reuses its pixel buffer
    try {
      io::decode_image(file.path, channels_, image);
    } catch (const Error& e) {
      throw DataError(file.path, describe() + ": " + e.what());
    }
    data::image_to_row(image, o_.image_height, o_.image_width, reinterpret_cast<float*>(out[0]));
    data::write_label(file.label, one_hot(), classes_, out[1]);
  }

  std::string describe() const override { return std::string(subset_) + "image folder \"" + directory_ + "\""; }

 private:
  bool one_hot() const { return o_.label_mode == "categorical"; }
  std::string directory_;
  std::vector<data::ImageFile> files_;
  ImageDirectoryOptions o_;
  int64_t channels_;
  std::size_t classes_;
  const char* subset_;
};

}  // namespace

ImageFolderSources image_folder_source(const std::string& directory, const ImageDirectoryOptions& o) {
  data::ImageListing listing = data::list_image_directory(directory, o, "image_folder_source(\"" + directory + "\")");
  ImageFolderSources result;
  result.class_names = listing.class_names;
  const std::size_t classes = listing.class_names.size();
  const auto split = listing.files.begin() + static_cast<std::ptrdiff_t>(listing.training);
  std::vector<data::ImageFile> validation(std::make_move_iterator(split), std::make_move_iterator(listing.files.end()));
  listing.files.erase(split, listing.files.end());
  const bool has_validation = !validation.empty();
  result.training = std::make_shared<ImageFolderSource>(directory, std::move(listing.files), o, listing.channels, classes,
                                                        has_validation ? "training subset of " : "");
  if (has_validation)
    result.validation =
        std::make_shared<ImageFolderSource>(directory, std::move(validation), o, listing.channels, classes, "validation subset of ");
  return result;
}

}  // namespace tandem::datasets
