// image_dataset_from_directory against a folder PIL wrote (tests/data/datasets/images, made with
// images.json by tests/data/make_image_files.py): PIL's decoded pixels, PIL's grayscale and
// numpy's half-pixel bilinear resize are the truth.
#include <doctest/doctest.h>
#include <tandem/data_files.h>
#include <tandem/errors.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "scratch_dir.h"

using nlohmann::json;
namespace td = tandem::datasets;

namespace {
const std::string kImages = std::string(TANDEM_TEST_DATA) + "/datasets/images";

json expected() {
  std::ifstream in(std::string(TANDEM_TEST_DATA) + "/datasets/images.json");
  return json::parse(in);
}

bool is_jpeg(const json& file) { return !file.at("file").get<std::string>().ends_with(".png"); }

// Largest difference between row r of x and `want`.
double max_diff(const tandem::Tensor& x, int64_t r, const std::vector<double>& want) {
  const int64_t n = x.size() / x.shape()[0];
  REQUIRE(static_cast<int64_t>(want.size()) == n);
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(x.item(r * n + i) - want[static_cast<std::size_t>(i)]));
  return worst;
}
}  // namespace

TEST_CASE("image_dataset_from_directory: Keras's order and labels, PIL's pixels and numpy's bilinear resize") {
  const json want = expected();
  const auto& files = want.at("files");
  for (const char* mode : {"rgb", "grayscale"}) {
    CAPTURE(mode);
    const bool gray = std::string(mode) == "grayscale";
    const td::ImageDirectory d = td::image_dataset_from_directory(
        kImages, {.color_mode = mode, .image_height = 4, .image_width = 3, .shuffle = false});
    CHECK(d.class_names == want.at("class_names").get<std::vector<std::string>>());
    REQUIRE(d.training.size() == static_cast<int64_t>(files.size()));  // notes.txt is skipped
    CHECK(d.validation.size() == 0);
    CHECK(d.training.x().shape() == tandem::Shape{d.training.size(), 4, 3, gray ? 1 : 3});
    for (std::size_t i = 0; i < files.size(); ++i) {
      CAPTURE(files[i].at("file").get<std::string>());
      CHECK(d.training.y().item(int64_t(i)) == files[i].at("label").get<int>());
      // PNG decodes exactly; JPEG goes through libjpeg-turbo here and in PIL, within one level.
      const double tolerance = (is_jpeg(files[i]) ? 1.0 : 0.0) + 1e-4;
      CHECK(max_diff(d.training.x(), int64_t(i), files[i].at(gray ? "gray_resized" : "rgb_resized").get<std::vector<double>>()) <=
            tolerance);
    }
  }
}

TEST_CASE("image_dataset_from_directory: at the stored size the pixels are PIL's, one file at a time") {
  const json want = expected();
  for (const json& file : want.at("files")) {
    const std::string name = file.at("file").get<std::string>();
    CAPTURE(name);
    const std::string cls = name.substr(0, name.find('/'));
    const td::ImageDirectory d = td::image_dataset_from_directory(
        kImages, {.class_names = {cls}, .image_height = file.at("height").get<int64_t>(),
                  .image_width = file.at("width").get<int64_t>(), .shuffle = false});
    // Within its class the file's index is its place among that class's files (sorted).
    int64_t row = 0;
    for (const json& other : want.at("files"))
      if (other.at("label") == file.at("label") && other.at("file").get<std::string>() < name) ++row;
    CHECK(max_diff(d.training.x(), row, file.at("rgb").get<std::vector<double>>()) <= (is_jpeg(file) ? 1.0 : 0.0));
  }
}

TEST_CASE("image_dataset_from_directory: seeded shuffle, Keras's split and one-hot labels") {
  const td::ImageDirectoryOptions o{.label_mode = "categorical", .image_height = 2, .image_width = 2, .seed = 5,
                                    .validation_split = 0.34};
  const td::ImageDirectory a = td::image_dataset_from_directory(kImages, o);
  const td::ImageDirectory b = td::image_dataset_from_directory(kImages, o);
  CHECK(a.training.size() == 4);  // int(0.34 · 6) = 2 files for validation, the last two
  CHECK(a.validation.size() == 2);
  CHECK(a.training.y().shape() == tandem::Shape{4, 3});
  CHECK(a.training.x().values<float>().size() == b.training.x().values<float>().size());
  CHECK(std::equal(a.training.x().values<float>().begin(), a.training.x().values<float>().end(), b.training.x().values<float>().begin()));
  for (int64_t r = 0; r < 4; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < 3; ++c) sum += a.training.y().item(r * 3 + c);
    CHECK(sum == 1.0);
  }
  // All six files appear once across the two subsets, whatever the order: compare sorted sums.
  const td::ImageDirectory plain = td::image_dataset_from_directory(kImages, {.image_height = 2, .image_width = 2, .shuffle = false});
  auto row_sums = [](const tandem::Tensor& x) {
    std::vector<double> s;
    for (int64_t r = 0; r < x.shape()[0]; ++r) {
      double t = 0;
      for (int64_t i = 0; i < 12; ++i) t += x.item(r * 12 + i);
      s.push_back(t);
    }
    return s;
  };
  std::vector<double> mixed = row_sums(a.training.x()), v = row_sums(a.validation.x()), all = row_sums(plain.training.x());
  mixed.insert(mixed.end(), v.begin(), v.end());
  std::sort(mixed.begin(), mixed.end());
  std::sort(all.begin(), all.end());
  CHECK(mixed == all);
  const td::ImageDirectory other = td::image_dataset_from_directory(kImages, {.image_height = 2, .image_width = 2, .seed = 6});
  const td::ImageDirectory same = td::image_dataset_from_directory(kImages, {.image_height = 2, .image_width = 2, .seed = 5});
  CHECK(row_sums(other.training.x()) != row_sums(same.training.x()));
}

TEST_CASE("image_dataset_from_directory: errors name the folder, the option and the file") {
  const ScratchRoot root("test_image_directory");
  const std::filesystem::path dir = root.fresh("images");
  CHECK_THROWS_WITH_AS(td::image_dataset_from_directory((dir / "missing").string()), doctest::Contains("not a folder"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(td::image_dataset_from_directory(dir.string()), doctest::Contains("no class subfolders"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(td::image_dataset_from_directory(kImages, {.color_mode = "cmyk"}),
                       doctest::Contains("color_mode must be \"rgb\", \"grayscale\" or \"rgba\", got \"cmyk\""), tandem::ValueError);
  CHECK_THROWS_WITH_AS(td::image_dataset_from_directory(kImages, {.class_names = {"cat", "fish"}}),
                       doctest::Contains("class \"fish\" has no folder"), tandem::ValueError);
  std::filesystem::create_directories(dir / "a");
  std::ofstream(dir / "a" / "broken.png") << "\x89PNG\r\n\x1a\n not really";
  CHECK_THROWS_WITH_AS(td::image_dataset_from_directory(dir.string()), doctest::Contains("broken.png"), tandem::Error);
  std::filesystem::remove(dir / "a" / "broken.png");
  std::ofstream(dir / "a" / "text.jpg") << "plain text";
  CHECK_THROWS_WITH_AS(td::image_dataset_from_directory(dir.string()), doctest::Contains("neither a PNG nor a JPEG"), tandem::Error);
  // A JPEG cut in half: libjpeg's error comes back as an exception, not an exit().
  std::ifstream full(kImages + "/dog/photo.jpg", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(full)), std::istreambuf_iterator<char>());
  std::filesystem::remove(dir / "a" / "text.jpg");
  std::ofstream(dir / "a" / "cut.jpg", std::ios::binary) << bytes.substr(0, 200);
  CHECK_THROWS_WITH_AS(td::image_dataset_from_directory(dir.string()), doctest::Contains("damaged JPEG"), tandem::Error);
}
