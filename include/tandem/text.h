// Text data: a reader for the fortune-cookie corpus of the Debian package `fortunes`, a byte
// vocabulary and next-character windows for language models, and TextVectorization, which turns
// texts into sequences of word (or character) ids for classifiers.
#pragma once

#include <array>
#include <optional>
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

// ---- StringLookup: strings to vocabulary indices on the host ----

namespace tandem::text {

// The arguments of keras.layers.StringLookup that apply to its "int" output.
struct StringLookupOptions {
  int64_t max_tokens = 0;       // the largest vocabulary, special indices included; 0: no limit
  int64_t num_oov_indices = 1;  // 0 or 1 (Keras hashes strings into several OOV indices with FarmHash)
  std::optional<std::string> mask_token{};  // maps to index 0 when given
  std::string oov_token = "[UNK]";
  std::vector<std::string> vocabulary{};    // in index order, optionally led by the special tokens
  bool invert = false;                      // recorded in the config; decode() is the inverse lookup
  std::string name = "string_lookup";
};

// Strings to the indices Keras 3's StringLookup gives them (output_mode "int"): index 0 the mask
// token when there is one, then the OOV index, then the vocabulary. Tandem's graph has no string
// tensors, so this runs on the host, before the ids reach a Dataset (as TextVectorization does);
// in the model, ids go on to Embedding, CategoryEncoding or IntegerLookup.
class StringLookup {
 public:
  explicit StringLookup(const StringLookupOptions& options = {});  // ValueError for a bad option
  // From Keras's StringLookup config (get_config(), or a layer's "config" in a .keras archive's
  // config.json) with its vocabulary in the config. An adapted Keras layer keeps its vocabulary in
  // the archive's assets (assets/.../vocabulary.txt) instead: read that with load_vocabulary.
  static StringLookup from_config(const std::string& keras_config_json);
  // Keras's StringLookup config, the vocabulary included (keras.layers.StringLookup.from_config
  // rebuilds the same lookup from it).
  std::string config_json() const;

  // Learns the vocabulary: by descending count, ties by descending byte order (Keras's order), the
  // mask and OOV tokens left out, cut to fit max_tokens. ValueError if a vocabulary was given.
  void adapt(std::span<const std::string> tokens);
  // The vocabulary as Keras's vocabulary.txt asset holds it: one token per line, special tokens
  // first. load_vocabulary replaces the vocabulary with such a file's.
  void save_vocabulary(const std::string& path) const;
  void load_vocabulary(const std::string& path);

  std::vector<std::string> get_vocabulary(bool include_special_tokens = true) const;
  int64_t vocabulary_size() const;
  int64_t lookup(std::string_view token) const;
  // The tokens' indices as an int64 tensor of `shape` (default: (tokens.size(),)).
  Tensor operator()(std::span<const std::string> tokens, Shape shape = {}) const;
  // Indices back to tokens (Keras's invert=True): the mask token for 0 when there is one, oov_token
  // for an index outside the vocabulary.
  std::vector<std::string> decode(const Tensor& ids) const;

 private:
  void set_vocabulary(std::vector<std::string> vocabulary);
  int64_t token_start() const { return (options_.mask_token ? 1 : 0) + options_.num_oov_indices; }
  StringLookupOptions options_;
  std::vector<std::string> tokens_;                 // without special tokens: index token_start() + i
  std::unordered_map<std::string, int64_t> index_;  // token -> index
  bool adapted_ = false;
};

}  // namespace tandem::text
