// TextVectorization: texts to id sequences with a learnt vocabulary, as Keras's output_mode "int".
#include <algorithm>
#include <map>

#include "tandem/errors.h"
#include "tandem/text.h"

namespace tandem::text {
namespace {

constexpr int32_t kFirstLearntId = 2;  // 0 is padding, 1 out of vocabulary

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }
// Keras's strip regex is exactly the 32 ASCII punctuation characters: !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~
bool is_punctuation(char c) { return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~'); }

void check_choice(const char* argument, const std::string& got, std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (got == a) return;
    list.append(list.empty() ? "\"" : ", \"").append(a).append("\"");
  }
  throw ValueError(std::string("TextVectorization: ").append(argument).append(" must be one of ").append(list).append(", got \"").append(got).append("\""));
}

}  // namespace

TextVectorization::TextVectorization(const TextVectorizationOptions& options) : options_(options) {
  check_choice("standardize", options.standardize, {"lower_and_strip_punctuation", "lower", "strip_punctuation", ""});
  check_choice("split", options.split, {"whitespace", "character"});
  if (options.max_tokens != 0 && options.max_tokens < kFirstLearntId + 1)
    throw ValueError("TextVectorization: max_tokens must be 0 (no limit) or >= 3 (padding, out of vocabulary and one token), got " +
                     std::to_string(options.max_tokens));
  if (options.output_sequence_length < 0)
    throw ValueError("TextVectorization: output_sequence_length must be >= 0 (0: the longest text), got " +
                     std::to_string(options.output_sequence_length));
}

std::vector<std::string> TextVectorization::tokens(std::string_view text) const {
  const bool lower = options_.standardize == "lower" || options_.standardize == "lower_and_strip_punctuation";
  const bool strip = options_.standardize == "strip_punctuation" || options_.standardize == "lower_and_strip_punctuation";
  std::string s;
  s.reserve(text.size());
  for (const char c : text) {
    if (strip && is_punctuation(c)) continue;
    s.push_back(lower && c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);  // ASCII only, as tf.strings.lower
  }
  std::vector<std::string> out;
  if (options_.split == "character") {
    for (std::size_t i = 0; i < s.size();) {
      std::size_t j = i + 1;
      while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) ++j;  // UTF-8 continuation bytes
      out.push_back(s.substr(i, j - i));
      i = j;
    }
    return out;
  }
  for (std::size_t i = 0; i < s.size();) {
    while (i < s.size() && is_space(s[i])) ++i;
    std::size_t j = i;
    while (j < s.size() && !is_space(s[j])) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

void TextVectorization::adapt(std::span<const std::string> texts) {
  std::map<std::string, int64_t> counts;
  for (const std::string& text : texts)
    for (std::string& token : tokens(text)) ++counts[std::move(token)];
  counts.erase("[UNK]");  // as Keras: the out-of-vocabulary token is id 1 already, not a learnt one
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(), counts.end());
  // Keras sorts by (count, token) and reverses: the most frequent first, ties in descending order.
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first > b.first; });
  if (options_.max_tokens > 0 && static_cast<int64_t>(sorted.size()) > options_.max_tokens - kFirstLearntId)
    sorted.resize(static_cast<std::size_t>(options_.max_tokens - kFirstLearntId));
  vocabulary_ = {"", "[UNK]"};
  ids_.clear();
  for (auto& [token, count] : sorted) {
    ids_.emplace(token, static_cast<int32_t>(vocabulary_.size()));
    vocabulary_.push_back(std::move(token));
  }
}

std::vector<int32_t> TextVectorization::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  for (const std::string& token : tokens(text)) {
    const auto it = ids_.find(token);
    ids.push_back(it == ids_.end() ? 1 : it->second);
  }
  return ids;
}

Tensor TextVectorization::operator()(std::span<const std::string> texts) const {
  std::vector<std::vector<int32_t>> sequences;
  sequences.reserve(texts.size());
  for (const std::string& text : texts) sequences.push_back(encode(text));
  return pad_sequences(sequences, {.maxlen = options_.output_sequence_length, .padding = "post", .truncating = "post"});
}

}  // namespace tandem::text
