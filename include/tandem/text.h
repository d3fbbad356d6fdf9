// Character-level text data: a reader for the fortune-cookie corpus of the Debian package
// `fortunes`, a byte vocabulary, and next-character windows for language models.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tandem/data.h"

namespace tandem::text {

// Where the Debian package `fortunes` installs its cookie files.
inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";

// Every fortune file in `dir` (the plain-text files; the strfile indexes *.dat and the *.u8
// symbolic links are skipped), concatenated in file-name order. The files keep their format: each
// fortune ends with a line holding a single '%'. Throws tandem::Error naming the package when the
// directory is missing or holds no fortune files.
std::string fortunes(const std::string& dir = kFortunesDir);

// The text as plain printable ASCII: overstruck characters ("x\bY", used for underlining and bold)
// become the character printed last, and every byte other than ' '..'~', '\n' and '\t' is dropped.
std::string plain_ascii(std::string_view raw);

// The distinct bytes of a text, sorted; id i stands for the i-th of them.
class Vocabulary {
 public:
  explicit Vocabulary(std::string_view text);

  int64_t size() const { return static_cast<int64_t>(chars_.size()); }
  const std::string& chars() const { return chars_; }  // the characters in id order
  bool contains(char c) const { return ids_[static_cast<unsigned char>(c)] >= 0; }
  int32_t id(char c) const;         // ValueError for a character outside the vocabulary
  char character(int32_t id) const;  // ValueError for an id outside [0, size())
  std::vector<int32_t> encode(std::string_view text) const;
  std::string decode(std::span<const int32_t> ids) const;

 private:
  std::string chars_;
  std::array<int32_t, 256> ids_;  // byte -> id, −1 when absent
};

// Next-character training pairs: row i is the window starting at i·stride, with x int32 (N, T) =
// ids[s, s+T) and y int32 (N, T) = ids[s+1, s+T+1), the same window shifted by one. Windows are
// taken while they fit, so N = (ids.size() − T − 1) / stride + 1 (0 when ids is shorter than T + 1).
// stride 0 means T (windows that do not overlap). ValueError for seq_len < 1 or stride < 0.
Dataset next_char_windows(std::span<const int32_t> ids, int64_t seq_len, int64_t stride = 0);

// Splits a sequence by position: the first (1 − validation_fraction) of it for training and the
// rest for validation. ValueError unless 0 <= validation_fraction < 1.
std::pair<std::vector<int32_t>, std::vector<int32_t>> split(std::span<const int32_t> ids, double validation_fraction);

}  // namespace tandem::text
