// write_shards: writes a data set as WebDataset tar shards (docs/data-sources.md).
//
//   write_shards --folder DIR --out "shards/train-%06d.tar" [--per-shard N] [--shuffle --seed S]
//       an image folder's files (one subfolder per class), copied as they are, with .cls labels
//   write_shards --fashion-mnist [--data DIR] [--test] [--count N] [--copies K] [--size N] [--seed S]
//                --out "shards/train-%06d.tar" [--per-shard N]
//       Fashion-MNIST's images as 8-bit grayscale PNG; copies beyond the first are flipped and
//       shifted at random (Keras's RandomFlip("horizontal") and RandomTranslation(0.1, 0.1));
//       --size N stores them resized to N x N
#include <tandem/data_sources.h>
#include <tandem/errors.h>

#include <cstdlib>
#include <iostream>
#include <string>

namespace {

int usage(const std::string& why) {
  std::cerr << "write_shards: " << why << "\n"
            << "usage: write_shards --folder DIR --out PATTERN [--per-shard N] [--shuffle] [--seed S]\n"
            << "       write_shards --fashion-mnist [--data DIR] [--test] [--count N] [--copies K] [--size N] [--seed S] --out PATTERN [--per-shard N]\n"
            << "PATTERN names the shards with one %d or %0Nd field, e.g. \"shards/train-%06d.tar\"\n";
  return 2;
}

int64_t number(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || v < 0) throw tandem::ValueError(flag + " takes a non-negative integer, got \"" + text + "\"");
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  namespace td = tandem::datasets;
  std::string folder, out, data_dir = "/usr/share/datasets/fashion-mnist";
  bool fashion = false, test = false, shuffle = false;
  int64_t per_shard = 10000, count = -1, copies = 1, size = 0;
  uint64_t seed = 0;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      const auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw tandem::ValueError(a + " needs a value");
        return argv[++i];
      };
      if (a == "--folder") folder = value();
      else if (a == "--fashion-mnist") fashion = true;
      else if (a == "--data") data_dir = value();
      else if (a == "--test") test = true;
      else if (a == "--shuffle") shuffle = true;
      else if (a == "--out") out = value();
      else if (a == "--per-shard") per_shard = number(a, value());
      else if (a == "--count") count = number(a, value());
      else if (a == "--copies") copies = number(a, value());
      else if (a == "--size") size = number(a, value());
      else if (a == "--seed") seed = static_cast<uint64_t>(number(a, value()));
      else return usage("unknown argument \"" + a + "\"");
    }
    if (out.empty()) return usage("--out is required");
    if (fashion == !folder.empty()) return usage("give one of --folder and --fashion-mnist");
    std::vector<std::string> shards;
    if (fashion) {
      auto [train, t10k] = td::fashion_mnist(data_dir);
      tandem::Dataset data = test ? t10k : train;
      if (count >= 0 && count < data.size()) data = data.slice(0, count);
      td::ShardWriterOptions o{.samples_per_shard = per_shard, .copies = copies, .seed = seed, .pixel_scale = 255.0,
                                  .image_height = size, .image_width = size};
      if (copies > 1) o.augment = {td::random_flip("horizontal"), td::random_translation(0.1, 0.1)};
      shards = td::write_tar_shards(data, out, o);
    } else {
      shards = td::write_image_folder_shards(folder, out, {.shuffle = shuffle, .seed = seed}, per_shard);
    }
    std::cout << "wrote " << shards.size() << " shard" << (shards.size() == 1 ? "" : "s");
    if (!shards.empty()) std::cout << ": " << shards.front() << (shards.size() > 1 ? " .. " + shards.back() : "");
    std::cout << "\n";
  } catch (const std::exception& e) {
    std::cerr << "write_shards: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
