// Datasets from files that Python's csv module and h5py wrote (tests/data/datasets, made by
// tests/data/make_dataset_files.py): the values must be the ones the writers were given.
#include <doctest/doctest.h>
#include <tandem/data_files.h>
#include <tandem/errors.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "scratch_dir.h"

using nlohmann::json;
using tandem::DType;

namespace {
const std::string kDir = std::string(TANDEM_TEST_DATA) + "/datasets/";

json expected() {
  std::ifstream in(kDir + "expected.json");
  return json::parse(in);
}

std::string write_file(const std::filesystem::path& dir, const std::string& name, const std::string& text) {
  const std::string path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}
}  // namespace

TEST_CASE("from_csv reads csv.writer's file: a quoted header with a comma, CRLF ends, int labels by name") {
  const json want = expected();
  const tandem::Dataset d = tandem::datasets::from_csv(kDir + "table.csv", {.label_column = std::string("label")});
  const auto& rows = want.at("csv_rows");
  REQUIRE(d.size() == static_cast<int64_t>(rows.size()));
  REQUIRE(d.x().shape() == tandem::Shape{6, 3});
  CHECK(d.x().dtype() == DType::F32);
  CHECK(d.y().dtype() == DType::I32);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::vector<double> row = rows[r].get<std::vector<double>>();
    CHECK(d.x().item(int64_t(r) * 3 + 0) == double(float(row[0])));
    CHECK(d.x().item(int64_t(r) * 3 + 1) == double(float(row[1])));
    CHECK(d.x().item(int64_t(r) * 3 + 2) == double(float(row[3])));
    CHECK(d.y().item(int64_t(r)) == row[2]);
  }
}

TEST_CASE("from_csv reads QUOTE_ALL with ';', selected columns by index and float labels") {
  const json want = expected();
  const tandem::Dataset d = tandem::datasets::from_csv(
      kDir + "quoted.csv", {.label_column = int64_t{3}, .delimiter = ';', .select_columns = {int64_t{1}, std::string("width, cm")}});
  const auto& rows = want.at("csv_rows");
  REQUIRE(d.x().shape() == tandem::Shape{6, 2});
  CHECK(d.y().dtype() == DType::F32);  // 0.5, 1.5, ... are not integers
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::vector<double> row = rows[r].get<std::vector<double>>();
    CHECK(d.x().item(int64_t(r) * 2 + 0) == double(float(row[1])));
    CHECK(d.x().item(int64_t(r) * 2 + 1) == double(float(row[0])));
    CHECK(d.y().item(int64_t(r)) == double(float(row[3])));
  }
}

TEST_CASE("from_csv errors name the file, the line, the column and the text") {
  const ScratchRoot root("test_dataset_files");
  const std::filesystem::path dir = root.fresh("csv");
  const std::string bad = write_file(dir, "bad.csv", "a,b,label\n1,2,0\n3,x7,1\n");
  CHECK_THROWS_WITH_AS(tandem::datasets::from_csv(bad), doctest::Contains("line 3"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tandem::datasets::from_csv(bad), doctest::Contains("x7"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tandem::datasets::from_csv(bad), doctest::Contains("bad.csv"), tandem::ValueError);
  const std::string short_row = write_file(dir, "short.csv", "a,b,label\n1,2,0\n3,1\n");
  CHECK_THROWS_WITH_AS(tandem::datasets::from_csv(short_row), doctest::Contains("line 3"), tandem::ValueError);
  const std::string open_quote = write_file(dir, "quote.csv", "a,label\n\"1,0\n");
  CHECK_THROWS_WITH_AS(tandem::datasets::from_csv(open_quote), doctest::Contains("quoted field is not closed"), tandem::Error);
  CHECK_THROWS_WITH_AS(tandem::datasets::from_csv(bad, {.label_column = std::string("target")}), doctest::Contains("target"),
                       tandem::ValueError);
  CHECK_THROWS_AS(tandem::datasets::from_csv((dir / "missing.csv").string()), tandem::Error);
}

TEST_CASE("from_hdf5 reads h5py's float64/int64 and uint8 datasets") {
  const json want = expected();
  const tandem::Dataset d = tandem::datasets::from_hdf5(kDir + "arrays.h5");
  REQUIRE(d.x().shape() == tandem::Shape{5, 3});
  CHECK(d.x().dtype() == DType::F64);
  CHECK(d.y().dtype() == DType::I64);
  const auto x = want.at("x64").get<std::vector<std::vector<double>>>();
  const auto y = want.at("y64").get<std::vector<int64_t>>();
  for (int64_t r = 0; r < 5; ++r) {
    for (int64_t c = 0; c < 3; ++c) CHECK(d.x().item(r * 3 + c) == x[std::size_t(r)][std::size_t(c)]);
    CHECK(d.y().item(r) == double(y[std::size_t(r)]));
  }
  const tandem::Dataset u = tandem::datasets::from_hdf5(kDir + "arrays.h5", "images", "classes");
  REQUIRE(u.x().shape() == tandem::Shape{4, 2, 2});
  CHECK(u.x().dtype() == DType::F32);
  CHECK(u.y().dtype() == DType::I32);
  const auto xi = want.at("xu8").get<std::vector<std::vector<std::vector<int>>>>();
  const auto yi = want.at("yu8").get<std::vector<int>>();
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t p = 0; p < 4; ++p) CHECK(u.x().item(i * 4 + p) == xi[std::size_t(i)][std::size_t(p / 2)][std::size_t(p % 2)]);
    CHECK(u.y().item(i) == yi[std::size_t(i)]);
  }
}

TEST_CASE("from_hdf5 errors name the dataset and what it is") {
  const std::string file = kDir + "arrays.h5";
  CHECK_THROWS_WITH_AS(tandem::datasets::from_hdf5(file, "nope", "y"), doctest::Contains("no dataset \"nope\" for x"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tandem::datasets::from_hdf5(file, "group", "y"), doctest::Contains("no dataset \"group\" for x (it is a group)"),
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(tandem::datasets::from_hdf5(file, "ragged", "y"),
                       doctest::Contains("dataset \"ragged\" has shape (3, 2) but \"y\" has shape (5,); their first dimensions (rows) must match"),
                       tandem::ShapeError);
}

TEST_CASE("Dataset::from_arrays copies vectors and pointers and names a size mismatch") {
  const std::vector<float> x{1, 2, 3, 4, 5, 6};
  const std::vector<int32_t> y{0, 1, 1};
  const tandem::Dataset d = tandem::Dataset::from_arrays(x, {3, 2}, y, {3});
  CHECK(d.size() == 3);
  CHECK(d.x().item(5) == 6);
  CHECK(d.y().item(2) == 1);
  const tandem::Dataset p = tandem::Dataset::from_arrays(x.data(), {2, 3}, y.data(), {2});
  CHECK(p.x().shape() == tandem::Shape{2, 3});
  CHECK_THROWS_WITH_AS(tandem::Dataset::from_arrays(x, {4, 2}, y, {3}), "Dataset::from_arrays: x has 6 values but its shape (4, 2) holds 8",
                       tandem::ShapeError);
  CHECK_THROWS_WITH_AS(tandem::Dataset::from_arrays(x, {3, 2}, y, {4}), "Dataset::from_arrays: y has 3 values but its shape (4,) holds 4",
                       tandem::ShapeError);
}
