// Text data: a reader for the fortune-cookie corpus of the Debian package `fortunes`, a byte
// vocabulary and next-character windows for language models, and TextVectorization, which turns
// texts into sequences of word (or character) ids for classifiers.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
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

// One fortune cookie: the name of the file it comes from ("computers", "love", ...) and its text
// (without the '%' line that ends it; the file's own bytes, see plain_ascii).
struct Fortune {
  std::string file;
  std::string text;
};
// Every fortune of every fortune file in `dir`, files in name order, fortunes in file order; empty
// ones are skipped. The same errors as fortunes().
std::vector<Fortune> fortune_list(const std::string& dir = kFortunesDir);

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

// The arguments of TextVectorization, with Keras's names and defaults for output_mode "int".
struct TextVectorizationOptions {
  // The most ids, counting the padding id 0 and the out-of-vocabulary id 1: adapt keeps the
  // max_tokens − 2 most frequent tokens. 0: no limit.
  int64_t max_tokens = 0;
  // "lower_and_strip_punctuation", "lower" (ASCII letters), "strip_punctuation" (the 32 ASCII
  // punctuation characters are removed) or "" (none).
  std::string standardize = "lower_and_strip_punctuation";
  // "whitespace" (tokens are the runs of non-space characters) or "character" (each UTF-8
  // character, spaces included, is a token).
  std::string split = "whitespace";
  // The length of operator()'s rows: longer texts are cut at the end, shorter ones padded at the
  // end with 0. 0: the longest text's length in that call.
  int64_t output_sequence_length = 0;
};

// Texts to id sequences, as keras.layers.TextVectorization with output_mode "int": standardize,
// split into tokens, look each token up in a vocabulary learnt by adapt. Id 0 is padding (the
// token ""), id 1 any token outside the vocabulary ("[UNK]"), ids from 2 the learnt tokens by
// descending count, ties in descending byte order, as Keras orders them. Unlike Keras's it is not
// a layer of the model: it runs on the host before the data reaches a Dataset.
class TextVectorization {
 public:
  explicit TextVectorization(const TextVectorizationOptions& options = {});  // ValueError for a bad option

  // Learns the vocabulary from `texts` (replacing any earlier one).
  void adapt(std::span<const std::string> texts);
  // "", "[UNK]", then the learnt tokens: id i is get_vocabulary()[i].
  const std::vector<std::string>& get_vocabulary() const { return vocabulary_; }
  int64_t vocabulary_size() const { return static_cast<int64_t>(vocabulary_.size()); }

  std::vector<std::string> tokens(std::string_view text) const;  // standardized and split
  std::vector<int32_t> encode(std::string_view text) const;       // one id per token, unpadded
  // The texts as one int32 tensor (texts.size(), length), padded and cut as the options say.
  Tensor operator()(std::span<const std::string> texts) const;

 private:
  TextVectorizationOptions options_;
  std::vector<std::string> vocabulary_{"", "[UNK]"};
  std::unordered_map<std::string, int32_t> ids_;  // learnt token -> id
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
