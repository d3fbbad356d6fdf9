#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tandem/data.h"
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

TEST_CASE("text: fortune_list splits the files at their '%' lines and names each fortune's file") {
  TempDir dir;
  dir.write("zippy", "Yow!\n%\n%\nAre we having fun yet?\n%\n");  // an empty fortune is skipped
  dir.write("art", "Art is long.\n%\nLife is\nshort");            // the last one lacks its '%'
  dir.write("art.dat", std::string("\0\0\0\2", 4));
  const std::vector<text::Fortune> list = text::fortune_list(dir.path.string());
  REQUIRE(list.size() == 4);
  CHECK(list[0].file == "art");
  CHECK(list[0].text == "Art is long.\n");
  CHECK(list[1].text == "Life is\nshort\n");
  CHECK(list[2].file == "zippy");
  CHECK(list[2].text == "Yow!\n");
  CHECK(list[3].text == "Are we having fun yet?\n");
  CHECK(contains(error_of([&] { text::fortune_list((dir.path / "absent").string()); }), "apt-get install fortunes"));
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

// pad_sequences, against the examples of keras.utils.pad_sequences's documentation and what it
// returns for the other combinations (checked with Keras 3.x).
TEST_CASE("pad_sequences: Keras's documented examples") {
  const std::vector<std::vector<int32_t>> seqs = {{1}, {2, 3}, {4, 5, 6}};
  const Tensor plain = pad_sequences(seqs);
  CHECK(plain.shape() == Shape{3, 3});
  CHECK(plain.dtype() == DType::I32);
  CHECK(row(plain, 0) == std::vector<int32_t>{0, 0, 1});
  CHECK(row(plain, 1) == std::vector<int32_t>{0, 2, 3});
  CHECK(row(plain, 2) == std::vector<int32_t>{4, 5, 6});

  const Tensor minus = pad_sequences(seqs, {.value = -1});
  CHECK(row(minus, 0) == std::vector<int32_t>{-1, -1, 1});
  CHECK(row(minus, 1) == std::vector<int32_t>{-1, 2, 3});

  const Tensor post = pad_sequences(seqs, {.padding = "post"});
  CHECK(row(post, 0) == std::vector<int32_t>{1, 0, 0});
  CHECK(row(post, 1) == std::vector<int32_t>{2, 3, 0});

  const Tensor cut = pad_sequences(seqs, {.maxlen = 2});  // truncating "pre" keeps the last ids
  CHECK(cut.shape() == Shape{3, 2});
  CHECK(row(cut, 0) == std::vector<int32_t>{0, 1});
  CHECK(row(cut, 2) == std::vector<int32_t>{5, 6});
}

TEST_CASE("pad_sequences: truncating post, padding and truncating at opposite ends, empty sequences, dtypes") {
  const std::vector<std::vector<int32_t>> seqs = {{1}, {2, 3}, {4, 5, 6}, {}};
  const Tensor head = pad_sequences(seqs, {.maxlen = 2, .truncating = "post"});
  CHECK(row(head, 2) == std::vector<int32_t>{4, 5});
  CHECK(row(head, 3) == std::vector<int32_t>{0, 0});  // an empty sequence is all padding

  const Tensor mixed = pad_sequences(seqs, {.maxlen = 2, .padding = "post", .truncating = "pre", .value = -1});
  CHECK(row(mixed, 0) == std::vector<int32_t>{1, -1});
  CHECK(row(mixed, 2) == std::vector<int32_t>{5, 6});
  CHECK(row(mixed, 3) == std::vector<int32_t>{-1, -1});

  const Tensor wide = pad_sequences(seqs, {.maxlen = 4, .dtype = DType::F32, .padding = "post", .value = 0.5});
  CHECK(wide.dtype() == DType::F32);
  const auto v = wide.values<float>();
  CHECK(std::vector<float>(v.begin(), v.begin() + 8) == std::vector<float>{1, 0.5f, 0.5f, 0.5f, 2, 3, 0.5f, 0.5f});
  const Tensor longs = pad_sequences(seqs, {.dtype = DType::I64});
  CHECK(longs.dtype() == DType::I64);
  CHECK(longs.item(2) == 1);

  CHECK(pad_sequences({{}, {}}).shape() == Shape{2, 0});
  CHECK(pad_sequences({}, {.maxlen = 5}).shape() == Shape{0, 5});
}

TEST_CASE("pad_sequences: bad arguments are ValueErrors naming them") {
  const std::vector<std::vector<int32_t>> seqs = {{1, 2}};
  CHECK_THROWS_WITH_AS(pad_sequences(seqs, {.maxlen = -1}), doctest::Contains("maxlen must be >= 0"), ValueError);
  CHECK_THROWS_WITH_AS(pad_sequences(seqs, {.padding = "middle"}), doctest::Contains("padding must be \"pre\" or \"post\", got \"middle\""), ValueError);
  CHECK_THROWS_WITH_AS(pad_sequences(seqs, {.truncating = "start"}), doctest::Contains("truncating must be"), ValueError);
  CHECK_THROWS_WITH_AS(pad_sequences(seqs, {.value = 0.5}), doctest::Contains("value must be a whole number that int32"), ValueError);
  CHECK_THROWS_WITH_AS(pad_sequences(seqs, {.value = 3e9}), doctest::Contains("3000000000"), ValueError);
  CHECK(pad_sequences(seqs, {.dtype = DType::I64, .value = 3e9}).item(0) == 1);  // int64 holds it
}

// TextVectorization, against the example of Keras's documentation and its rules for the
// vocabulary (counts descending, ties in descending token order; "" and "[UNK]" first).
TEST_CASE("TextVectorization: Keras's documented example") {
  text::TextVectorization vectorize({.max_tokens = 5000, .output_sequence_length = 4});
  const std::vector<std::string> data = {"foo bar", "bar baz", "baz bada boom"};
  vectorize.adapt(data);
  CHECK(vectorize.get_vocabulary() == std::vector<std::string>{"", "[UNK]", "baz", "bar", "foo", "boom", "bada"});
  const std::vector<std::string> input = {"foo qux bar", "qux baz"};
  const Tensor ids = vectorize(input);
  CHECK(ids.shape() == Shape{2, 4});
  CHECK(ids.dtype() == DType::I32);
  CHECK(row(ids, 0) == std::vector<int32_t>{4, 1, 3, 0});
  CHECK(row(ids, 1) == std::vector<int32_t>{1, 2, 0, 0});
}

TEST_CASE("TextVectorization: standardize, split, max_tokens and output lengths") {
  text::TextVectorization words;
  CHECK(words.tokens("Don't PANIC!\tIt's 4.2 -- ok?\n") == std::vector<std::string>{"dont", "panic", "its", "42", "ok"});
  CHECK(text::TextVectorization({.standardize = "lower"}).tokens("Don't PANIC!") == std::vector<std::string>{"don't", "panic!"});
  CHECK(text::TextVectorization({.standardize = "strip_punctuation"}).tokens("Don't PANIC!") == std::vector<std::string>{"Dont", "PANIC"});
  CHECK(text::TextVectorization({.standardize = ""}).tokens(" a,B ") == std::vector<std::string>{"a,B"});
  CHECK(text::TextVectorization({.split = "character"}).tokens("Ab, c\xc3\xa9") ==
        std::vector<std::string>{"a", "b", " ", "c", "\xc3\xa9"});  // é is one UTF-8 character

  // max_tokens counts the padding and OOV ids: 4 keeps the two most frequent tokens.
  text::TextVectorization small({.max_tokens = 4});
  const std::vector<std::string> data = {"a a a b b c", "c c c c d"};
  small.adapt(data);
  CHECK(small.get_vocabulary() == std::vector<std::string>{"", "[UNK]", "c", "a"});
  CHECK(small.vocabulary_size() == 4);
  CHECK(small.encode("A b C d e") == std::vector<int32_t>{3, 1, 2, 1, 1});
  // Without output_sequence_length the rows are as long as the longest text, padded at the end.
  const std::vector<std::string> texts = {"c", "a c a", ""};
  const Tensor ids = small(texts);
  CHECK(ids.shape() == Shape{3, 3});
  CHECK(row(ids, 0) == std::vector<int32_t>{2, 0, 0});
  CHECK(row(ids, 1) == std::vector<int32_t>{3, 2, 3});
  CHECK(row(ids, 2) == std::vector<int32_t>{0, 0, 0});
  // With it, longer texts are cut at the end.
  text::TextVectorization two({.output_sequence_length = 2});
  two.adapt(data);
  CHECK(row(two(texts), 1) == std::vector<int32_t>{3, 2});
  // Before adapt every token is out of vocabulary.
  CHECK(text::TextVectorization().encode("x y") == std::vector<int32_t>{1, 1});
}

TEST_CASE("TextVectorization: bad options are ValueErrors naming them") {
  CHECK_THROWS_WITH_AS(text::TextVectorization({.max_tokens = 2}), doctest::Contains("max_tokens must be 0 (no limit) or >= 3"), ValueError);
  CHECK_THROWS_WITH_AS(text::TextVectorization({.standardize = "upper"}),
                       doctest::Contains("standardize must be one of \"lower_and_strip_punctuation\""), ValueError);
  CHECK_THROWS_WITH_AS(text::TextVectorization({.split = "comma"}), doctest::Contains("split must be one of \"whitespace\", \"character\", got \"comma\""),
                       ValueError);
  CHECK_THROWS_WITH_AS(text::TextVectorization({.output_sequence_length = -1}), doctest::Contains("output_sequence_length must be >= 0"), ValueError);
}
