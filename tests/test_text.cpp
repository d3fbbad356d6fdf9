#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tandem/errors.h"
#include "tandem/text.h"

using namespace tandem;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() / ("tandem_text_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  void write(const std::string& name, const std::string& contents) const {
    std::ofstream(path / name, std::ios::binary) << contents;
  }
};

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::vector<int32_t> row(const Tensor& t, int64_t r) {
  const auto v = t.values<int32_t>();
  const int64_t n = t.shape()[1];
  return {v.begin() + r * n, v.begin() + (r + 1) * n};
}

}  // namespace

TEST_CASE("text: vocabulary is the sorted distinct bytes") {
  const text::Vocabulary vocab("hello world\n");
  CHECK(vocab.size() == 9);
  CHECK(vocab.chars() == std::string("\n dehlorw"));
  CHECK(vocab.id('\n') == 0);
  CHECK(vocab.id('w') == 8);
  CHECK(vocab.character(4) == 'h');
  CHECK(vocab.contains('o'));
  CHECK_FALSE(vocab.contains('z'));
  CHECK(vocab.encode("hold") == std::vector<int32_t>{4, 6, 5, 2});
  const std::vector<int32_t> ids = vocab.encode("hello world\n");
  CHECK(vocab.decode(ids) == "hello world\n");
  CHECK_THROWS_AS(vocab.id('z'), ValueError);
  CHECK(contains(error_of([&] { vocab.encode("hz"); }), "byte 122"));
  CHECK_THROWS_AS(vocab.character(9), ValueError);
  CHECK_THROWS_AS(vocab.character(-1), ValueError);
}

TEST_CASE("text: windows pair each character with the next one") {
  const std::vector<int32_t> ids = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};

  const Dataset plain = text::next_char_windows(ids, 3);  // stride 3: windows at 0, 3, 6
  REQUIRE(plain.size() == 3);
  CHECK(plain.x().shape() == Shape{3, 3});
  CHECK(plain.y().shape() == Shape{3, 3});
  CHECK(plain.x().dtype() == DType::I32);
  CHECK(plain.y().dtype() == DType::I32);
  CHECK(row(plain.x(), 0) == std::vector<int32_t>{0, 1, 2});
  CHECK(row(plain.y(), 0) == std::vector<int32_t>{1, 2, 3});
  CHECK(row(plain.x(), 2) == std::vector<int32_t>{6, 7, 8});
  CHECK(row(plain.y(), 2) == std::vector<int32_t>{7, 8, 9});

  const Dataset dense = text::next_char_windows(ids, 4, 1);  // every start 0..5
  REQUIRE(dense.size() == 6);
  for (int64_t r = 0; r < dense.size(); ++r) {
    const std::vector<int32_t> x = row(dense.x(), r), y = row(dense.y(), r);
    CHECK(x.front() == r);
    CHECK(std::equal(x.begin() + 1, x.end(), y.begin()));  // y is x shifted by one
    CHECK(y.back() == r + 4);
  }

  CHECK(text::next_char_windows(ids, 9).size() == 1);
  CHECK(text::next_char_windows(ids, 10).size() == 0);
  CHECK_THROWS_AS(text::next_char_windows(ids, 0), ValueError);
  CHECK_THROWS_AS(text::next_char_windows(ids, 3, -1), ValueError);
}

TEST_CASE("text: split keeps positions in order") {
  const std::vector<int32_t> ids = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  const auto [train, val] = text::split(ids, 0.2);
  CHECK(train == std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(val == std::vector<int32_t>{8, 9});
  CHECK(text::split(ids, 0.0).second.empty());
  CHECK_THROWS_AS(text::split(ids, 1.0), ValueError);
  CHECK_THROWS_AS(text::split(ids, -0.1), ValueError);
}

TEST_CASE("text: plain_ascii resolves overstrikes and drops other bytes") {
  CHECK(text::plain_ascii("_\bA_\bB c") == "AB c");
  CHECK(text::plain_ascii("bold: B\bBo\bo\n") == "bold: Bo\n");
  CHECK(text::plain_ascii("tab\there\a\r\n") == "tab\there\n");
  CHECK(text::plain_ascii("caf\xc3\xa9!") == "caf!");
  CHECK(text::plain_ascii("\xc3\b") == "");  // nothing kept to overstrike
}

TEST_CASE("text: fortunes names the package when the corpus is missing") {
  TempDir dir;
  const std::string absent = (dir.path / "absent").string();
  const std::string msg = error_of([&] { text::fortunes(absent); });
  CHECK(contains(msg, absent));
  CHECK(contains(msg, "apt-get install fortunes"));

  // A directory with only indexes and links holds no fortunes either.
  dir.write("cookie.dat", "index");
  fs::create_symlink(dir.path / "cookie.dat", dir.path / "cookie.u8");
  const std::string empty = error_of([&] { text::fortunes(dir.path.string()); });
  CHECK(contains(empty, "no fortune files"));
  CHECK(contains(empty, "Debian package fortunes"));
}

TEST_CASE("text: fortunes reads the text files in name order") {
  TempDir dir;
  dir.write("zippy", "Yow!\n%\n");
  dir.write("art", "Art is long.\n%\nLife is short");
  dir.write("art.dat", std::string("\0\0\0\2", 4));
  fs::create_symlink(dir.path / "art", dir.path / "art.u8");
  CHECK(text::fortunes(dir.path.string()) == "Art is long.\n%\nLife is short\nYow!\n%\n");
}

TEST_CASE("text: the fortunes package corpus loads") {
  if (!fs::exists(text::kFortunesDir)) {
    MESSAGE("skipped: " << text::kFortunesDir << " is absent (apt-get install fortunes)");
    return;
  }
  const std::string raw = text::fortunes();
  CHECK(raw.size() > 1'000'000);
  CHECK(contains(raw, "\n%\n"));
  const std::string plain = text::plain_ascii(raw);
  const text::Vocabulary vocab(plain);
  CHECK(vocab.size() > 60);
  CHECK(vocab.size() <= 97);  // printable ASCII, newline and tab
  CHECK(vocab.contains('%'));
  CHECK(vocab.contains('\n'));
  const std::vector<int32_t> ids = vocab.encode(plain);
  const Dataset windows = text::next_char_windows(ids, 64, 4096);
  CHECK(windows.size() == (int64_t(ids.size()) - 65) / 4096 + 1);
  CHECK(windows.x().shape() == Shape{windows.size(), 64});
}
