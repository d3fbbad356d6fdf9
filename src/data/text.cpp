#include "tandem/text.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "tandem/errors.h"

namespace tandem::text {
namespace fs = std::filesystem;

namespace {

std::string missing_package(const std::string& what) {
  return "text::fortunes: " + what +
         "; the fortune files are provided by the Debian package fortunes "
         "(install it with `apt-get install fortunes`)";
}

bool is_fortune_file(const fs::directory_entry& entry) {
  // fortune's own layout: "name" is the text, "name.dat" its strfile index, "name.u8" a link to it.
  if (entry.is_symlink() || !entry.is_regular_file()) return false;
  const std::string ext = entry.path().extension().string();
  return ext != ".dat" && ext != ".u8";
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("text::fortunes: cannot open " + path.string());
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw Error("text::fortunes: error while reading " + path.string());
  return std::move(buffer).str();
}

// The fortune files of `dir`, sorted by name (directory order varies between file systems).
std::vector<fs::path> fortune_files(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(missing_package("missing directory " + dir));
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec))
    if (is_fortune_file(entry)) files.push_back(entry.path());
  if (ec) throw Error("text::fortunes: cannot list " + dir + ": " + ec.message());
  if (files.empty()) throw Error(missing_package("no fortune files in " + dir));
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

std::string fortunes(const std::string& dir) {
  std::string corpus;
  for (const fs::path& path : fortune_files(dir)) {
    corpus += read_file(path);
    // Files end with a newline; make sure one file's last line never runs into the next one's first.
    if (!corpus.empty() && corpus.back() != '\n') corpus += '\n';
  }
  return corpus;
}

std::vector<Fortune> fortune_list(const std::string& dir) {
  std::vector<Fortune> list;
  for (const fs::path& path : fortune_files(dir)) {
    const std::string contents = read_file(path), name = path.filename().string();
    std::string text;
    std::size_t pos = 0;
    while (pos < contents.size()) {
      std::size_t end = contents.find('\n', pos);
      if (end == std::string::npos) end = contents.size();
      const std::string_view line(contents.data() + pos, end - pos);
      if (line == "%") {
        if (!text.empty()) list.push_back({name, std::move(text)});
        text.clear();
      } else {
        text.append(line).push_back('\n');
      }
      pos = end + 1;
    }
    if (!text.empty()) list.push_back({name, std::move(text)});  // a last fortune without its '%'
  }
  return list;
}

std::string plain_ascii(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  bool last_kept = false;  // whether the previous raw byte is the last one in `out`
  for (const char c : raw) {
    if (c == '\b') {
      // "x\bY" prints Y over x: drop x, keep what comes next.
      if (last_kept) out.pop_back();
      last_kept = false;
    } else if ((c >= ' ' && c <= '~') || c == '\n' || c == '\t') {
      out.push_back(c);
      last_kept = true;
    } else {
      last_kept = false;
    }
  }
  return out;
}

Vocabulary::Vocabulary(std::string_view text) {
  std::array<bool, 256> seen{};
  for (const char c : text) seen[static_cast<unsigned char>(c)] = true;
  ids_.fill(-1);
  for (int b = 0; b < 256; ++b)
    if (seen[static_cast<std::size_t>(b)]) {
      ids_[static_cast<std::size_t>(b)] = static_cast<int32_t>(chars_.size());
      chars_.push_back(static_cast<char>(b));
    }
}

int32_t Vocabulary::id(char c) const {
  const int32_t i = ids_[static_cast<unsigned char>(c)];
  if (i < 0)
    throw ValueError("text::Vocabulary: byte " + std::to_string(int(static_cast<unsigned char>(c))) +
                     " is not in the vocabulary of " + std::to_string(size()) + " characters");
  return i;
}

char Vocabulary::character(int32_t id) const {
  if (id < 0 || id >= size())
    throw ValueError("text::Vocabulary: id " + std::to_string(id) + " is outside [0, " + std::to_string(size()) + ")");
  return chars_[static_cast<std::size_t>(id)];
}

std::vector<int32_t> Vocabulary::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size());
  for (const char c : text) ids.push_back(id(c));
  return ids;
}

std::string Vocabulary::decode(std::span<const int32_t> ids) const {
  std::string text;
  text.reserve(ids.size());
  for (const int32_t i : ids) text.push_back(character(i));
  return text;
}

Dataset next_char_windows(std::span<const int32_t> ids, int64_t seq_len, int64_t stride) {
  if (seq_len < 1) throw ValueError("text::next_char_windows: seq_len must be >= 1, got " + std::to_string(seq_len));
  if (stride < 0) throw ValueError("text::next_char_windows: stride must be >= 0, got " + std::to_string(stride));
  if (stride == 0) stride = seq_len;
  const auto n_ids = static_cast<int64_t>(ids.size());
  const int64_t rows = n_ids < seq_len + 1 ? 0 : (n_ids - seq_len - 1) / stride + 1;
  Tensor x(Shape{rows, seq_len}, DType::I32), y(Shape{rows, seq_len}, DType::I32);
  if (rows == 0) return Dataset(x, y);
  int32_t* px = x.data<int32_t>();
  int32_t* py = y.data<int32_t>();
  for (int64_t r = 0; r < rows; ++r) {
    const auto start = ids.begin() + r * stride;
    std::copy(start, start + seq_len, px + r * seq_len);
    std::copy(start + 1, start + seq_len + 1, py + r * seq_len);
  }
  return Dataset(x, y);
}

std::pair<std::vector<int32_t>, std::vector<int32_t>> split(std::span<const int32_t> ids, double validation_fraction) {
  if (!(validation_fraction >= 0.0 && validation_fraction < 1.0))
    throw ValueError("text::split: validation_fraction must be in [0, 1), got " + std::to_string(validation_fraction));
  const auto n_train = static_cast<std::ptrdiff_t>(static_cast<double>(ids.size()) * (1.0 - validation_fraction));
  return {std::vector<int32_t>(ids.begin(), ids.begin() + n_train), std::vector<int32_t>(ids.begin() + n_train, ids.end())};
}

}  // namespace tandem::text
