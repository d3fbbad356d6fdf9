// The file sources of data_sources.h: each sample equals, bit for bit, the row the in-memory loader
// gives for the same file (image_dataset_from_directory, from_hdf5, from_csv), or the values the
// shards were written from (Fashion-MNIST's bytes); reads from 8 threads at once equal the
// single-threaded ones; every unreadable file, corrupt image and truncated shard is a DataError
// that names the file (and the member or line).
#include <doctest/doctest.h>
#include <tandem/data_sources.h>
#include <tandem/errors.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "io/csv_file.h"
#include "io/hdf5_file.h"
#include "io/png_encode.h"
#include "io/tar_file.h"
#include "scratch_dir.h"

namespace fs = std::filesystem;
namespace td = tandem::datasets;
using tandem::DataError;
using tandem::DType;
using tandem::Shape;
using tandem::Source;
using tandem::Tensor;

namespace {
const ScratchRoot scratch("test_data_sources");
const std::string kImages = std::string(TANDEM_TEST_DATA) + "/datasets/images";
const std::string kDatasets = std::string(TANDEM_TEST_DATA) + "/datasets/";
const std::string kFashion = "/usr/share/datasets/fashion-mnist";

using Sample = std::vector<std::vector<std::byte>>;  // one buffer per column

Sample read_sample(const Source& s, int64_t i) {
  const tandem::SampleType t = s.sample_type();
  Sample out;
  std::vector<std::byte*> buffers;
  for (std::size_t c = 0; c < t.columns(); ++c) out.emplace_back(t.column(c).bytes(), std::byte{0x5A});
  for (auto& b : out) buffers.push_back(b.data());
  s.read(i, buffers);
  return out;
}

// Row r of a tensor's bytes.
std::vector<std::byte> row_bytes(const Tensor& t, int64_t r) {
  const std::size_t n = t.bytes() / static_cast<std::size_t>(t.shape()[0]);
  const auto* p = static_cast<const std::byte*>(t.raw()) + static_cast<std::size_t>(r) * n;
  return {p, p + n};
}

// Every sample of `s` equals row r of `d` bit for bit, and its type is d's row type.
void check_equals(const Source& s, const tandem::Dataset& d) {
  REQUIRE(s.size() == d.size());
  const tandem::SampleType t = s.sample_type();
  REQUIRE(t.x.size() == 1);
  REQUIRE(t.y.size() == 1);
  const auto row_type = [](const Tensor& x) {
    const auto& dims = x.shape().dims();
    return tandem::TensorType{Shape(std::vector<int64_t>(dims.begin() + 1, dims.end())), x.dtype()};
  };
  CHECK(t.x[0] == row_type(d.x()));
  CHECK(t.y[0] == row_type(d.y()));
  for (int64_t i = 0; i < s.size(); ++i) {
    CAPTURE(i);
    const Sample got = read_sample(s, i);
    CHECK(got[0] == row_bytes(d.x(), i));
    CHECK(got[1] == row_bytes(d.y(), i));
  }
}

// 8 threads read random indices (each index many times over) and each result equals the
// single-threaded read of that index.
void check_concurrent(const Source& s) {
  std::vector<Sample> want;
  for (int64_t i = 0; i < s.size(); ++i) want.push_back(read_sample(s, i));
  std::vector<int> mismatches(8, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::mt19937_64 random(static_cast<uint64_t>(t) + 1);
      for (int k = 0; k < 40; ++k) {
        const auto i = static_cast<int64_t>(random() % static_cast<uint64_t>(s.size()));
        if (read_sample(s, i) != want[static_cast<std::size_t>(i)]) ++mismatches[static_cast<std::size_t>(t)];
      }
    });
  for (auto& th : threads) th.join();
  for (int m : mismatches) CHECK(m == 0);
}

std::string write_file(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
  return path.string();
}

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::span<const uint8_t> bytes_of(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

// A small gray PNG whose pixels depend on `seed`.
std::string small_png(int seed) {
  std::vector<uint8_t> px(6 * 5);
  for (std::size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(seed * 37 + static_cast<int>(i) * 11);
  return tandem::io::encode_png(6, 5, 1, px);
}

// The message of the DataError `f` throws, and its path.
template <class F>
std::pair<std::string, std::string> data_error(F&& f) {
  try {
    f();
  } catch (const DataError& e) {
    return {e.what(), e.path()};
  }
  FAIL("no DataError");
  return {};
}
}  // namespace

// ---------------------------------------------------------------- image folders

TEST_CASE("image_folder_source: every sample equals image_dataset_from_directory's row, in its order and split") {
  struct Case {
    std::string color, labels;
    bool shuffle;
    double split;
  };
  for (const Case& c : {Case{"rgb", "int", false, 0.0}, Case{"grayscale", "int", true, 0.34}, Case{"rgba", "categorical", true, 0.5}}) {
    CAPTURE(c.color);
    const td::ImageDirectoryOptions o{.label_mode = c.labels, .color_mode = c.color, .image_height = 5, .image_width = 7,
                                      .shuffle = c.shuffle, .seed = 11, .validation_split = c.split};
    const td::ImageDirectory memory = td::image_dataset_from_directory(kImages, o);
    const td::ImageFolderSources lazy = td::image_folder_source(kImages, o);
    CHECK(lazy.class_names == memory.class_names);
    check_equals(*lazy.training, memory.training);
    if (c.split > 0) {
      REQUIRE(lazy.validation);
      check_equals(*lazy.validation, memory.validation);
    } else {
      CHECK(!lazy.validation);
    }
    CHECK(lazy.training->describe().find(kImages) != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(td::image_folder_source(kImages, {.color_mode = "cmyk"}), doctest::Contains("image_folder_source"),
                       tandem::ValueError);
}

TEST_CASE("image_folder_source: a corrupt, truncated or vanished image is a DataError naming the file") {
  const fs::path dir = scratch.fresh("bad_images");
  write_file(dir / "a" / "good.png", small_png(1));
  const std::string corrupt = write_file(dir / "a" / "corrupt.png", "this is not an image at all");
  const std::string png = small_png(2);
  const std::string truncated = write_file(dir / "b" / "truncated.png", png.substr(0, png.size() / 2));
  const std::string jpeg = write_file(dir / "b" / "zz.jpg", std::string("\xFF\xD8\xFF\xE0", 4) + "garbage");
  const std::string vanishing = write_file(dir / "b" / "vanishing.png", small_png(3));
  const td::ImageFolderSources s = td::image_folder_source(dir.string(), {.image_height = 6, .image_width = 5, .shuffle = false});
  REQUIRE(s.training->size() == 5);
  fs::remove(vanishing);
  // Keras's order: class a's files sorted, then class b's.
  CHECK(read_sample(*s.training, 1)[1].size() == sizeof(int32_t));  // good.png reads
  for (const auto& [index, path, reason] : {std::tuple{0, corrupt, "neither a PNG nor a JPEG"}, std::tuple{2, truncated, "PNG"},
                                            std::tuple{3, vanishing, "cannot open"}, std::tuple{4, jpeg, "damaged JPEG"}}) {
    CAPTURE(path);
    const auto [message, error_path] = data_error([&, i = index] { read_sample(*s.training, i); });
    CHECK(error_path == path);
    CHECK(message.find(path) != std::string::npos);
    CHECK(message.find(reason) != std::string::npos);
  }
}

// ---------------------------------------------------------------- HDF5

TEST_CASE("hdf5_source: rows equal from_hdf5's, whatever the block size, for h5py's and Tandem's files") {
  const fs::path dir = scratch.fresh("hdf5");
  const std::string path = (dir / "data.h5").string();
  {
    auto f = tandem::io::H5File::create(path);
    std::vector<float> x(23 * 2 * 3);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(double(i))) * 100.f;
    std::vector<double> y(23);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = double(i) / 7.0;
    f.write_dataset("/inputs/x", Tensor::from(Shape{23, 2, 3}, std::span<const float>(x)));
    f.write_dataset("targets", Tensor::from(Shape{23}, std::span<const double>(y)));
    f.close();
  }
  for (int64_t block : {0, 1, 4, 100}) {
    CAPTURE(block);
    const auto s = td::hdf5_source(path, {.x_dataset = "/inputs/x", .y_dataset = "targets", .block_rows = block, .cached_blocks = 2});
    check_equals(*s, td::from_hdf5(path, "/inputs/x", "targets"));
    // Backwards and scattered reads cross the cached blocks.
    for (int64_t i : {22, 0, 13, 3, 22, 7}) CHECK(read_sample(*s, i)[0] == row_bytes(td::from_hdf5(path, "/inputs/x", "targets").x(), i));
  }
  // h5py's file: float64/int64 and uint8 (x as float32, y as int32, as from_hdf5 reads them).
  check_equals(*td::hdf5_source(kDatasets + "arrays.h5"), td::from_hdf5(kDatasets + "arrays.h5"));
  check_equals(*td::hdf5_source(kDatasets + "arrays.h5", {.x_dataset = "images", .y_dataset = "classes"}),
               td::from_hdf5(kDatasets + "arrays.h5", "images", "classes"));
  MESSAGE("HDF5 library thread-safe: " << tandem::io::hdf5_is_threadsafe());
}

TEST_CASE("hdf5_source: a missing file is a DataError naming it; bad datasets are errors as from_hdf5's") {
  const std::string missing = (scratch.fresh("hdf5_missing") / "none.h5").string();
  const auto [message, path] = data_error([&] { td::hdf5_source(missing); });
  CHECK(path == missing);
  CHECK(message.find(missing) != std::string::npos);
  CHECK_THROWS_WITH_AS(td::hdf5_source(kDatasets + "arrays.h5", {.x_dataset = "nope"}), doctest::Contains("no dataset \"nope\" for x"),
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(td::hdf5_source(kDatasets + "arrays.h5", {.x_dataset = "ragged"}), doctest::Contains("first dimensions (rows) must match"),
                       tandem::ShapeError);
}

// ---------------------------------------------------------------- CSV

TEST_CASE("CsvParser: a file fed in pieces of any size gives read_csv's records, and each record's offset") {
  const std::string text = "a,\"b\"\"q\",c\r\n\n\"multi\nline\",2,3\r\nlone\rcr,x,\"\"\n\"last\",\"\",9";
  const std::string path = write_file(scratch.fresh("csv_parser") / "t.csv", text);
  const std::vector<tandem::io::CsvRecord> whole = tandem::io::read_csv(path);
  REQUIRE(whole.size() == 4);
  CHECK(whole[1].fields[0] == "multi\nline");
  CHECK(whole[2].fields[0] == "lone\rcr");
  for (std::size_t piece : {1, 2, 3, 5, 64}) {
    CAPTURE(piece);
    std::vector<tandem::io::CsvRecord> got;
    std::vector<int64_t> offsets;
    tandem::io::CsvParser p(path, ',', [&](tandem::io::CsvRecord& r, int64_t at) {
      got.push_back(r);
      offsets.push_back(at);
    });
    for (std::size_t at = 0; at < text.size(); at += piece) p.feed(std::string_view(text).substr(at, piece));
    p.finish();
    REQUIRE(got.size() == whole.size());
    for (std::size_t r = 0; r < got.size(); ++r) {
      CHECK(got[r].fields == whole[r].fields);
      CHECK(got[r].line == whole[r].line);
    }
    CHECK(offsets == std::vector<int64_t>{0, 13, 31, 44});
  }
}

TEST_CASE("CsvParser: every record of random text parses again, alone, from its offset and line") {
  std::mt19937 random(2);
  const char alphabet[] = {'a', '1', ',', '"', '\n', '\r', ' '};
  int64_t records = 0, mismatches = 0;
  for (int k = 0; k < 5000; ++k) {
    std::string text(random() % 16, ' ');
    for (char& c : text) c = alphabet[random() % sizeof alphabet];
    std::vector<tandem::io::CsvRecord> all;
    std::vector<int64_t> offsets;
    try {
      tandem::io::CsvParser p("random.csv", ',', [&](tandem::io::CsvRecord& r, int64_t at) {
        all.push_back(r);
        offsets.push_back(at);
      });
      p.feed(text);
      p.finish();
    } catch (const tandem::Error&) {
      continue;  // malformed text: errors are read_csv's
    }
    for (std::size_t i = 0; i < all.size(); ++i) {
      const int64_t end = i + 1 < all.size() ? offsets[i + 1] : static_cast<int64_t>(text.size());
      std::vector<tandem::io::CsvRecord> one;
      tandem::io::CsvParser q("random.csv", ',', [&](tandem::io::CsvRecord& r, int64_t) { one.push_back(r); }, offsets[i], all[i].line);
      q.feed(std::string_view(text).substr(static_cast<std::size_t>(offsets[i]), static_cast<std::size_t>(end - offsets[i])));
      q.finish();
      ++records;
      mismatches += one.size() != 1 || one[0].fields != all[i].fields || one[0].line != all[i].line;
    }
  }
  CHECK(records > 2000);
  CHECK(mismatches == 0);
}

TEST_CASE("csv_source: rows equal from_csv's (quoting, CRLF, blank lines, label dtypes, selected columns)") {
  const fs::path dir = scratch.fresh("csv");
  const std::string mixed = write_file(dir / "mixed.csv",
                                       "f1,\"f,2\",label\r\n1.5,2,0\r\n\r\n\"3\",\" -4e-3 \",1\n5,6.25,2\n\n7,8,3");
  const std::string floats = write_file(dir / "floats.csv", "1,2,0.5\n3,4,1\n5,6,2.5\n");
  struct Case {
    std::string path;
    td::CsvOptions options;
  };
  const std::vector<Case> cases{
      {kDatasets + "table.csv", {.label_column = std::string("label")}},
      {kDatasets + "quoted.csv", {.label_column = int64_t{2}, .delimiter = ';'}},
      {kDatasets + "table.csv", {.label_column = std::string("label"), .select_columns = {int64_t{3}, std::string("width, cm")}}},
      {mixed, {}},
      {mixed, {.label_dtype = DType::F64}},
      {floats, {.header = false}},
      {floats, {.label_column = int64_t{0}, .header = false}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.path);
    const auto s = td::csv_source(c.path, c.options);
    check_equals(*s, td::from_csv(c.path, c.options));
  }
  CHECK(td::csv_source(floats, {.header = false})->sample_type().y[0].dtype == DType::F32);
  CHECK(td::csv_source(mixed)->sample_type().y[0].dtype == DType::I32);
}

TEST_CASE("csv_source: errors name the file and the line") {
  const fs::path dir = scratch.fresh("csv_errors");
  const std::string missing = (dir / "none.csv").string();
  CHECK(data_error([&] { td::csv_source(missing); }).second == missing);

  // A bad feature is found when its row is read; a bad label or field count when the file is indexed.
  const std::string bad_feature = write_file(dir / "feature.csv", "a,b,label\n1,2,0\n3,oops,1\n");
  const auto s = td::csv_source(bad_feature);
  CHECK(read_sample(*s, 0)[1].size() == 4);
  auto [message, path] = data_error([&] { read_sample(*s, 1); });
  CHECK(path == bad_feature);
  CHECK(message.find(bad_feature + ": line 3, column 1 (\"b\"): \"oops\" is not a number") != std::string::npos);

  const std::string bad_label = write_file(dir / "label.csv", "a,label\n1,0\n\n2,zero\n");
  std::tie(message, path) = data_error([&] { td::csv_source(bad_label); });
  CHECK(path == bad_label);
  CHECK(message.find("line 4, column 1 (\"label\"): \"zero\" is not a number") != std::string::npos);

  const std::string ragged = write_file(dir / "ragged.csv", "a,b,label\n1,2,0\n1,2\n");
  std::tie(message, path) = data_error([&] { td::csv_source(ragged); });
  CHECK(message.find(ragged + ": line 3 has 2 fields, expected 3") != std::string::npos);

  const std::string unclosed = write_file(dir / "unclosed.csv", "a,label\n1,0\n\"2,1\n");
  std::tie(message, path) = data_error([&] { td::csv_source(unclosed); });
  CHECK(message.find(unclosed + ": line 3: a quoted field is not closed") != std::string::npos);

  CHECK_THROWS_WITH_AS(td::csv_source(ragged, {.label_column = std::string("nope")}), doctest::Contains("no column named \"nope\""),
                       tandem::ValueError);
}

// ---------------------------------------------------------------- tar shards

TEST_CASE("expand_shard_pattern: brace ranges keep the first number's width") {
  CHECK(td::expand_shard_pattern("d/train-{000008..000011}.tar") ==
        std::vector<std::string>{"d/train-000008.tar", "d/train-000009.tar", "d/train-000010.tar", "d/train-000011.tar"});
  CHECK(td::expand_shard_pattern("s{1..2}-{0..1}.tar") == std::vector<std::string>{"s1-0.tar", "s1-1.tar", "s2-0.tar", "s2-1.tar"});
  CHECK(td::expand_shard_pattern("one.tar") == std::vector<std::string>{"one.tar"});
  CHECK_THROWS_AS(td::expand_shard_pattern("x-{3..1}.tar"), tandem::ValueError);
  CHECK_THROWS_AS(td::expand_shard_pattern("x-{a..b}.tar"), tandem::ValueError);
}

TEST_CASE("index_tar: member offsets are right for long (pax) names, and read by offset give the bytes written") {
  const fs::path dir = scratch.fresh("tar_index");
  const std::string path = (dir / "t.tar").string();
  const std::string long_name = std::string(150, 'n') + "/" + std::string(120, 'm') + ".bin";
  const std::vector<std::pair<std::string, std::string>> members{
      {"a.txt", "hello"}, {long_name, std::string(1000, 'x') + "end"}, {"empty.txt", ""}, {"b/c.dat", std::string(512, '\7')}};
  {
    tandem::io::TarWriter w(path);
    for (const auto& [name, data] : members) w.add(name, bytes_of(data));
    w.close();
  }
  const std::vector<tandem::io::TarMember> index = tandem::io::index_tar(path);
  REQUIRE(index.size() == members.size());
  for (std::size_t i = 0; i < members.size(); ++i) {
    CHECK(index[i].name == members[i].first);
    const std::vector<uint8_t> got = tandem::io::read_file_range(path, index[i].offset, index[i].size, index[i].name);
    CHECK(std::string(got.begin(), got.end()) == members[i].second);
  }
}

TEST_CASE("tar_shards_source: shards Python's tarfile wrote (GNU long names, pax headers) read as the image folder they hold") {
  // tests/data/make_tar_shards.py: the folder's six images in Keras's unshuffled order, with labels.
  const td::ImageDirectory memory =
      td::image_dataset_from_directory(kImages, {.color_mode = "rgba", .image_height = 3, .image_width = 5, .shuffle = false});
  for (const char* shard : {"python_gnu.tar", "python_pax.tar"}) {
    CAPTURE(shard);
    const auto s = td::tar_shards_source(kDatasets + "shards/" + shard, {.image_height = 3, .image_width = 5, .color_mode = "rgba"});
    check_equals(*s, memory.training);
  }
}

TEST_CASE("tar_shards_source: an image folder written as shards reads back as image_dataset_from_directory's rows") {
  const fs::path dir = scratch.fresh("folder_shards");
  const std::vector<std::string> shards =
      td::write_image_folder_shards(kImages, (dir / "s-%03d.tar").string(), {.shuffle = true, .seed = 5}, 2);
  const td::ImageDirectory memory =
      td::image_dataset_from_directory(kImages, {.color_mode = "rgb", .image_height = 9, .image_width = 4, .shuffle = true, .seed = 5});
  REQUIRE(memory.training.size() == 6);
  REQUIRE(shards.size() == 3);
  CHECK(shards[1] == (dir / "s-001.tar").string());
  const auto s = td::tar_shards_source((dir / "s-{000..002}.tar").string(),
                                       {.image_height = 9, .image_width = 4, .color_mode = "rgb", .num_classes = 3});
  check_equals(*s, memory.training);
  check_concurrent(*s);
  // categorical labels as image_dataset_from_directory makes them
  const auto one_hot = td::tar_shards_source(shards, {.image_height = 9, .image_width = 4, .label_mode = "categorical", .num_classes = 3});
  const td::ImageDirectory memory_one_hot = td::image_dataset_from_directory(
      kImages, {.label_mode = "categorical", .image_height = 9, .image_width = 4, .shuffle = true, .seed = 5});
  check_equals(*one_hot, memory_one_hot.training);
}

TEST_CASE("write_tar_shards: Fashion-MNIST's first 1000 images read back bit for bit; copies are augmented and reproducible") {
  if (!fs::exists(kFashion + "/train-images-idx3-ubyte.gz")) {
    MESSAGE("skipped: Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)");
    return;
  }
  const tandem::Dataset first = td::fashion_mnist(kFashion).first.slice(0, 1000);
  const fs::path dir = scratch.fresh("fashion_shards");
  const std::vector<std::string> shards = td::write_tar_shards(first, (dir / "train-%06d.tar").string(), {.samples_per_shard = 300});
  REQUIRE(shards.size() == 4);
  const auto s = td::tar_shards_source((dir / "train-{000000..000003}.tar").string(),
                                       {.image_height = 28, .image_width = 28, .color_mode = "grayscale", .num_classes = 10});
  REQUIRE(s->size() == 1000);
  CHECK(s->sample_type().x[0] == tandem::TensorType{Shape{28, 28, 1}, DType::F32});
  int64_t mismatches = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    const Sample got = read_sample(*s, i);
    const auto* pixels = reinterpret_cast<const float*>(got[0].data());
    // fashion_mnist scales the stored byte b as b · (1/255); the shard holds b itself.
    for (int64_t p = 0; p < 28 * 28; ++p) {
      const float b = pixels[p];
      if (b != std::floor(b) || b * (1.0f / 255.0f) != first.x().data<float>()[i * 784 + p]) ++mismatches;
    }
    int32_t label;
    std::memcpy(&label, got[1].data(), sizeof label);
    if (label != first.y().data<int32_t>()[i]) ++mismatches;
  }
  CHECK(mismatches == 0);
  check_concurrent(*td::tar_shards_source(shards[3], {.image_height = 28, .image_width = 28, .color_mode = "grayscale"}));

  // Three copies of 40 images: copy 0 is the image, the others flipped and shifted; the same seed
  // writes the same bytes.
  const tandem::Dataset few = first.slice(0, 40);
  const td::ShardWriterOptions o{.samples_per_shard = 50, .copies = 3, .augment = {td::random_flip("horizontal"), td::random_translation(0.2, 0.2)}, .seed = 9};
  const std::vector<std::string> a = td::write_tar_shards(few, (dir / "aug-a-%d.tar").string(), o);
  const std::vector<std::string> b = td::write_tar_shards(few, (dir / "aug-b-%d.tar").string(), o);
  REQUIRE(a.size() == 3);
  for (std::size_t k = 0; k < a.size(); ++k) CHECK(read_whole(a[k]) == read_whole(b[k]));
  const auto aug = td::tar_shards_source(a, {.image_height = 28, .image_width = 28, .color_mode = "grayscale"});
  REQUIRE(aug->size() == 120);
  int64_t changed = 0;
  for (int64_t i = 0; i < 40; ++i) {
    const Sample original = read_sample(*aug, 3 * i);
    CHECK(original[0] == read_sample(*s, i)[0]);
    CHECK(read_sample(*aug, 3 * i + 1)[1] == original[1]);
    changed += read_sample(*aug, 3 * i + 1)[0] != original[0];
    changed += read_sample(*aug, 3 * i + 2)[0] != original[0];
  }
  CHECK(changed > 60);  // of 80 augmented copies, almost all differ from their image
}

TEST_CASE("write_tar_shards: images stored resized: twice the size is the half-pixel bilinear closed form") {
  // 3 gray images of 4 x 3 with values 0..255; doubled, output pixel 2i reads 0.25·in[i−1] +
  // 0.75·in[i] and 2i+1 reads 0.75·in[i] + 0.25·in[i+1] along each axis (edges clamped).
  std::vector<float> x(3 * 4 * 3);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float((i * 53 + 7) % 256);
  const tandem::Dataset d = tandem::Dataset::from_arrays(x, {3, 4, 3}, std::vector<int32_t>{0, 1, 2}, {3});
  const fs::path dir = scratch.fresh("resized_shards");
  td::write_tar_shards(d, (dir / "r-%d.tar").string(), {.pixel_scale = 1.0, .image_height = 8, .image_width = 6});
  const auto s = td::tar_shards_source((dir / "r-0.tar").string(), {.image_height = 8, .image_width = 6, .color_mode = "grayscale"});
  const auto taps = [](int64_t o, int64_t n) {
    const int64_t i = o / 2;
    return o % 2 == 0 ? std::tuple{std::max<int64_t>(i - 1, 0), i, 0.75} : std::tuple{i, std::min<int64_t>(i + 1, n - 1), 0.25};
  };
  double worst = 0;
  for (int64_t k = 0; k < 3; ++k) {
    const Sample got = read_sample(*s, k);
    const auto* px = reinterpret_cast<const float*>(got[0].data());
    const auto in = [&](int64_t r, int64_t c) { return double(x[static_cast<std::size_t>(k * 12 + r * 3 + c)]); };
    for (int64_t r = 0; r < 8; ++r)
      for (int64_t c = 0; c < 6; ++c) {
        const auto [r0, r1, fr] = taps(r, 4);
        const auto [c0, c1, fc] = taps(c, 3);
        // (low, high, f): the pixel is (1 − f)·in[low] + f·in[high]
        const double top = (1 - fc) * in(r0, c0) + fc * in(r0, c1), bottom = (1 - fc) * in(r1, c0) + fc * in(r1, c1);
        worst = std::max(worst, std::abs(double(px[r * 6 + c]) - std::nearbyint((1 - fr) * top + fr * bottom)));
      }
  }
  CHECK(worst <= 1.0);  // a tie at .5 may round either way in float32
}

TEST_CASE("tar_shards_source: a missing, foreign, truncated or incomplete shard and a corrupt member are DataErrors naming shard and member") {
  const fs::path dir = scratch.fresh("bad_shards");
  const auto make = [&](const std::string& name, const std::vector<std::pair<std::string, std::string>>& members) {
    const std::string path = (dir / name).string();
    tandem::io::TarWriter w(path);
    for (const auto& [n, data] : members) w.add(n, bytes_of(data));
    w.close();
    return path;
  };
  const td::TarShardsOptions o{.image_height = 6, .image_width = 5, .color_mode = "grayscale", .num_classes = 10};
  const std::string good = make("good.tar", {{"k0.png", small_png(0)}, {"k0.cls", "3"}, {"k1.png", small_png(1)}, {"k1.cls", "4\n"}});
  REQUIRE(td::tar_shards_source(good, o)->size() == 2);

  struct Case {
    std::string what, shard, needle;
  };
  std::vector<Case> at_open;
  const std::string missing = (dir / "missing.tar").string();
  at_open.push_back({"missing", missing, "cannot open"});
  at_open.push_back({"not a tar", write_file(dir / "text.tar", std::string(3000, 'z')), "not a readable uncompressed tar"});
  // Cut inside the second member's data, and cut at a block boundary before the end blocks.
  const std::string bytes = read_whole(good);
  const std::vector<tandem::io::TarMember> index = tandem::io::index_tar(good);
  at_open.push_back({"cut in data", write_file(dir / "cut-data.tar", bytes.substr(0, static_cast<std::size_t>(index[1].offset + 3))),
                     "truncated or damaged after member \"k0.cls\""});
  const auto end_of_last = static_cast<std::size_t>((index[3].offset + index[3].size + 511) / 512 * 512);
  at_open.push_back({"cut before end", write_file(dir / "cut-end.tar", bytes.substr(0, end_of_last)), "truncated: no end-of-archive blocks after member \"k1.cls\""});
  at_open.push_back({"cut in header", write_file(dir / "cut-header.tar", bytes.substr(0, static_cast<std::size_t>(index[2].offset - 100))),
                     "truncated or damaged after member \"k0.cls\""});
  // Cut inside a member large enough that libarchive seeks over its data rather than reading it.
  const std::string big = make("big.tar", {{"k0.png", small_png(0)}, {"k0.npy", std::string(400000, 'b')}, {"k0.cls", "3"}});
  at_open.push_back({"cut in a large member", write_file(dir / "cut-big.tar", read_whole(big).substr(0, 200000)), "member \"k0.npy\": truncated: its data ends at byte"});
  at_open.push_back({"no label", make("nolabel.tar", {{"k0.png", small_png(0)}, {"k0.cls", "3"}, {"k1.png", small_png(1)}}),
                     "sample \"k1\": no label member (.cls)"});
  at_open.push_back({"no image", make("noimage.tar", {{"k0.cls", "3"}}), "sample \"k0\": no image member (.png, .jpg, .jpeg)"});
  for (const Case& c : at_open) {
    CAPTURE(c.what);
    const auto [message, path] = data_error([&] { td::tar_shards_source(std::vector<std::string>{good, c.shard}, o); });
    CHECK(path == c.shard);
    CHECK(message.find(c.shard) != std::string::npos);
    CHECK_MESSAGE(message.find(c.needle) != std::string::npos, message);
  }

  // Shards are indexed on several threads; the error reported is the first bad shard's in order.
  for (std::size_t first = 0; first < 3; ++first) {
    const std::vector<std::string> order{at_open[first].shard, good, at_open[(first + 1) % 3].shard, at_open[(first + 2) % 3].shard};
    CHECK(data_error([&] { td::tar_shards_source(order, o); }).second == at_open[first].shard);
  }

  std::vector<Case> at_read;
  at_read.push_back({"corrupt png", make("corrupt.tar", {{"k0.png", "\x89PNG garbage"}, {"k0.cls", "1"}}), "member \"k0.png\": image k0.png: not a readable PNG"});
  at_read.push_back({"text label", make("textlabel.tar", {{"k0.png", small_png(0)}, {"k0.cls", "cat"}}), "member \"k0.cls\": not a class id: \"cat\""});
  at_read.push_back({"label range", make("range.tar", {{"k0.png", small_png(0)}, {"k0.cls", "10"}}), "member \"k0.cls\": class id 10 is outside 0 .. 9"});
  for (const Case& c : at_read) {
    CAPTURE(c.what);
    const auto s = td::tar_shards_source(c.shard, o);
    const auto [message, path] = data_error([&] { read_sample(*s, 0); });
    CHECK(path == c.shard);
    CHECK(message.find("tar shard \"" + c.shard + "\"") != std::string::npos);
    CHECK_MESSAGE(message.find(c.needle) != std::string::npos, message);
  }
  // A shard replaced by a shorter file after it was indexed.
  const std::string shrinking = make("shrinking.tar", {{"k0.png", small_png(0)}, {"k0.cls", "3"}});
  const auto s = td::tar_shards_source(shrinking, o);
  fs::resize_file(shrinking, 600);
  const auto [message, path] = data_error([&] { read_sample(*s, 0); });
  CHECK(path == shrinking);
  CHECK(message.find("truncated") != std::string::npos);
  // A shard removed after it was indexed.
  const std::string vanishing = make("vanishing.tar", {{"k0.png", small_png(0)}, {"k0.cls", "3"}});
  const auto v = td::tar_shards_source(vanishing, o);
  fs::remove(vanishing);
  const auto [gone, gone_path] = data_error([&] { read_sample(*v, 0); });
  CHECK(gone_path == vanishing);
  CHECK(gone.find("cannot open") != std::string::npos);
}

// ---------------------------------------------------------------- all sources, 8 threads

TEST_CASE("every source: reads from 8 threads at once equal the single-threaded reads") {
  check_concurrent(*td::image_folder_source(kImages, {.color_mode = "rgb", .image_height = 8, .image_width = 8}).training);
  check_concurrent(*td::hdf5_source(kDatasets + "arrays.h5", {.block_rows = 2, .cached_blocks = 1}));
  check_concurrent(*td::csv_source(kDatasets + "table.csv", {.label_column = std::string("label")}));
}
