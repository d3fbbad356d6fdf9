// datasets::image_dataset_from_directory: class subfolders of PNG and JPEG files (io/image_file) to
// one float32 tensor of resized images and their labels, in Keras's file order and split
// (data/image_files.h, shared with the lazy image_folder_source).
#include "data/image_files.h"
#include "tandem/data_files.h"
#include "tandem/errors.h"

namespace tandem::datasets {
namespace {

Dataset load(const std::vector<data::ImageFile>& files, std::size_t begin, std::size_t end, const ImageDirectoryOptions& o,
             int64_t channels, std::size_t classes) {
  const auto rows = static_cast<int64_t>(end - begin);
  Tensor x(Shape{rows, o.image_height, o.image_width, channels}, DType::F32);
  const bool one_hot = o.label_mode == "categorical";
  Tensor y = one_hot ? Tensor(Shape{rows, static_cast<int64_t>(classes)}, DType::F32) : Tensor(Shape{rows}, DType::I32);
  const int64_t image_values = o.image_height * o.image_width * channels;
  const std::size_t label_bytes = y.bytes() / static_cast<std::size_t>(rows);
  io::ImagePixels image;
  for (std::size_t i = begin; i < end; ++i) {
    const auto r = static_cast<int64_t>(i - begin);
    io::decode_image(files[i].path, channels, image);
    data::image_to_row(image, o.image_height, o.image_width, x.data<float>() + r * image_values);
    data::write_label(files[i].label, one_hot, classes, static_cast<std::byte*>(y.raw()) + static_cast<std::size_t>(r) * label_bytes);
  }
  return Dataset(std::move(x), std::move(y));
}
}  // namespace

ImageDirectory image_dataset_from_directory(const std::string& directory, const ImageDirectoryOptions& o) {
  const data::ImageListing listing = data::list_image_directory(directory, o, "image_dataset_from_directory(\"" + directory + "\")");
  ImageDirectory result;
  result.class_names = listing.class_names;
  const std::size_t classes = listing.class_names.size();
  result.training = load(listing.files, 0, listing.training, o, listing.channels, classes);
  if (listing.training < listing.files.size())
    result.validation = load(listing.files, listing.training, listing.files.size(), o, listing.channels, classes);
  return result;
}

}  // namespace tandem::datasets
