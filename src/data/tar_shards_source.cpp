// datasets::tar_shards_source: samples in WebDataset tar shards. Each shard's members are indexed
// once (io/tar_file.h); a sample is a run of consecutive members sharing a key; read() reads the
// sample's image and label members by offset and decodes the image as image_dataset_from_directory
// does (data/image_files.h).
#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <exception>
#include <optional>
#include <thread>

#include "data/image_files.h"
#include "data/read_check.h"
#include "io/tar_file.h"
#include "tandem/data_sources.h"
#include "tandem/errors.h"

namespace tandem::datasets {
namespace {

constexpr const char* kWho = "tar_shards_source";

struct Member {
  int64_t offset = -1, size = 0;
  std::string name;
};

struct Sample {
  std::size_t shard;
  Member x, y;
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// WebDataset's split of a member name: the key is the path up to the first dot of the base name,
// the extension the rest ("a/b/000123.seg.png": key "a/b/000123", extension "seg.png").
std::pair<std::string, std::string> key_and_extension(const std::string& name) {
  const std::size_t base = name.rfind('/') == std::string::npos ? 0 : name.rfind('/') + 1;
  const std::size_t dot = name.find('.', base);
  if (dot == std::string::npos) return {name, ""};
  return {name.substr(0, dot), name.substr(dot + 1)};
}

std::string member_text(const std::string& shard, const std::string& member) {
  return "tar shard \"" + shard + "\", member \"" + member + "\"";
}

class TarShardsSource final : public Source {
 public:
  TarShardsSource(std::vector<std::string> shards, const TarShardsOptions& o) : shards_(std::move(shards)), o_(o) {
    channels_ = data::channels_of(o.color_mode, kWho);
    if (shards_.empty()) throw ValueError(std::string(kWho) + ": no shards given");
    if (o.image_height < 1 || o.image_width < 1)
      throw ValueError(std::string(kWho) + ": image_height and image_width must be positive, got " + std::to_string(o.image_height) +
                       " x " + std::to_string(o.image_width));
    if (o.label_mode != "int" && o.label_mode != "categorical")
      throw ValueError(std::string(kWho) + ": label_mode must be \"int\" or \"categorical\", got \"" + o.label_mode + "\"");
    if (o.label_mode == "categorical" && o.num_classes < 1)
      throw ValueError(std::string(kWho) + ": label_mode \"categorical\" needs num_classes (the one-hot width), got " +
                       std::to_string(o.num_classes));
    if (o.image_extensions.empty() || o.label_extension.empty())
      throw ValueError(std::string(kWho) + ": image_extensions and label_extension must name at least one extension");
    index_all();
  }

  int64_t size() const override { return static_cast<int64_t>(samples_.size()); }

  SampleType sample_type() const override {
    return data::image_sample_type(o_.image_height, o_.image_width, channels_, o_.label_mode == "categorical" ? o_.num_classes : 0);
  }

  void read(int64_t index, std::span<std::byte* const> out) const override {
    data::check_read(*this, index, out.size(), 2);
    const Sample& s = samples_[static_cast<std::size_t>(index)];
    const std::string& shard = shards_[s.shard];
    int32_t label = 0;
    thread_local io::ImagePixels image;  // each decoding thread reuses its pixel buffer
    std::optional<io::RangeReader> file;
    try {
      file.emplace(shard);
    } catch (const Error& e) {
      throw DataError(shard, describe() + ": " + e.what());
    }
    try {
      const std::vector<uint8_t> y = file->read(s.y.offset, s.y.size, "member \"" + s.y.name + "\"");
      label = parse_label(std::string_view(reinterpret_cast<const char*>(y.data()), y.size()));
    } catch (const Error& e) {
      throw DataError(shard, member_text(shard, s.y.name) + ": " + e.what());
    }
    try {
      io::decode_image_bytes(s.x.name, file->read(s.x.offset, s.x.size, "member \"" + s.x.name + "\""), channels_, image);
    } catch (const Error& e) {
      throw DataError(shard, member_text(shard, s.x.name) + ": " + e.what());
    }
    data::image_to_row(image, o_.image_height, o_.image_width, reinterpret_cast<float*>(out[0]));
    data::write_label(label, o_.label_mode == "categorical", static_cast<std::size_t>(o_.num_classes), out[1]);
  }

  std::string describe() const override {
    return std::to_string(shards_.size()) + " tar shard" + (shards_.size() == 1 ? "" : "s") + " (\"" + shards_.front() + "\"" +
           (shards_.size() > 1 ? " to \"" + shards_.back() + "\")" : ")");
  }

 private:
  // A label member: a decimal class id, with spaces or a line break around it allowed.
  int32_t parse_label(std::string_view text) const {
    const auto b = text.find_first_not_of(" \t\r\n");
    const auto e = text.find_last_not_of(" \t\r\n");
    const std::string_view t = b == std::string_view::npos ? std::string_view() : text.substr(b, e - b + 1);
    int32_t id = 0;
    const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), id);
    if (t.empty() || ec != std::errc() || p != t.data() + t.size())
      throw Error("not a class id: \"" + std::string(text.substr(0, 40)) + "\" (expected a decimal integer)");
    if (id < 0 || (o_.num_classes > 0 && id >= o_.num_classes))
      throw Error("class id " + std::to_string(id) + " is outside 0 .. " +
                  (o_.num_classes > 0 ? std::to_string(o_.num_classes - 1) + " (num_classes " + std::to_string(o_.num_classes) + ")"
                                      : std::string("(negative)")));
    return id;
  }

  // Indexes the shards on a few threads (each shard's headers are many small reads, so a
  // data set of many shards indexes faster on a fast disk); the first error in shard order is
  // thrown, whatever the timing.
  void index_all() {
    std::vector<std::vector<Sample>> per_shard(shards_.size());
    std::vector<std::exception_ptr> errors(shards_.size());
    std::atomic<std::size_t> next{0};
    const auto work = [&] {
      for (std::size_t s; (s = next++) < shards_.size();) {
        try {
          per_shard[s] = index(s);
        } catch (...) {
          errors[s] = std::current_exception();
        }
      }
    };
    const std::size_t threads = std::min<std::size_t>(shards_.size(), 8);
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
    for (std::vector<Sample>& samples : per_shard) {
      samples_.insert(samples_.end(), std::make_move_iterator(samples.begin()), std::make_move_iterator(samples.end()));
      std::vector<Sample>().swap(samples);
    }
  }

  std::vector<Sample> index(std::size_t s) const {
    const std::string& shard = shards_[s];
    std::vector<Sample> samples;
    std::vector<io::TarMember> members;
    try {
      members = io::index_tar(shard);
    } catch (const Error& e) {
      throw DataError(shard, std::string(kWho) + ": " + e.what());
    }
    for (std::size_t i = 0; i < members.size();) {
      const std::string key = key_and_extension(members[i].name).first;
      Sample sample{s, {}, {}};
      std::size_t image_rank = o_.image_extensions.size();  // the best image extension seen so far
      for (; i < members.size() && key_and_extension(members[i].name).first == key; ++i) {
        const std::string ext = lower(key_and_extension(members[i].name).second);
        const Member m{members[i].offset, members[i].size, members[i].name};
        for (std::size_t r = 0; r < image_rank; ++r)
          if (ext == lower(o_.image_extensions[r])) sample.x = m, image_rank = r;
        if (ext == lower(o_.label_extension)) sample.y = m;
      }
      if (sample.x.offset < 0 || sample.y.offset < 0) {
        std::string want = "label member (." + o_.label_extension + ")";
        if (sample.x.offset < 0) {
          want = "image member (";
          for (std::size_t r = 0; r < o_.image_extensions.size(); ++r) want += (r ? ", ." : ".") + o_.image_extensions[r];
          want += ")";
        }
        throw DataError(shard, std::string(kWho) + ": tar shard \"" + shard + "\", sample \"" + key + "\": no " + want +
                                   " among its members (a sample's members must follow each other in the tar)");
      }
      samples.push_back(std::move(sample));
    }
    return samples;
  }

  std::vector<std::string> shards_;
  TarShardsOptions o_;
  int64_t channels_ = 3;
  std::vector<Sample> samples_;
};

}  // namespace

std::vector<std::string> expand_shard_pattern(const std::string& pattern) {
  const std::size_t open = pattern.find('{');
  if (open == std::string::npos) return {pattern};
  const std::size_t dots = pattern.find("..", open), close = pattern.find('}', open);
  const auto bad = [&](const std::string& why) {
    return ValueError("expand_shard_pattern(\"" + pattern + "\"): " + why + "; write a range as {000000..000009}");
  };
  if (dots == std::string::npos || close == std::string::npos || dots > close) throw bad("a '{' without a '..' range and '}'");
  const std::string first = pattern.substr(open + 1, dots - open - 1), last = pattern.substr(dots + 2, close - dots - 2);
  int64_t a = 0, b = 0;
  const auto number = [](const std::string& t, int64_t& v) {
    const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    return !t.empty() && ec == std::errc() && p == t.data() + t.size() && v >= 0;
  };
  if (!number(first, a) || !number(last, b)) throw bad("the range's ends \"" + first + "\" and \"" + last + "\" are not numbers");
  if (a > b) throw bad("the range " + first + ".." + last + " is empty");
  std::vector<std::string> out;
  for (int64_t i = a; i <= b; ++i) {
    std::string n = std::to_string(i);
    if (n.size() < first.size()) n.insert(0, first.size() - n.size(), '0');
    for (std::string& rest : expand_shard_pattern(pattern.substr(close + 1))) out.push_back(pattern.substr(0, open) + n + rest);
  }
  return out;
}

std::shared_ptr<Source> tar_shards_source(const std::vector<std::string>& shards, const TarShardsOptions& options) {
  return std::make_shared<TarShardsSource>(shards, options);
}

std::shared_ptr<Source> tar_shards_source(const std::string& pattern, const TarShardsOptions& options) {
  return std::make_shared<TarShardsSource>(expand_shard_pattern(pattern), options);
}

}  // namespace tandem::datasets
