// datasets::hdf5_source: from_hdf5's two datasets read a block of rows at a time (hyperslabs), the
// last few blocks kept. HDF5 calls are serialized by one lock per source: Debian's serial HDF5 is
// built thread-safe, but then it takes a global lock of its own, so nothing is lost by locking
// here, and the source stays correct on a build that is not thread-safe.
#include <algorithm>
#include <cstring>
#include <list>
#include <mutex>

#include "data/hdf5_columns.h"
#include "data/read_check.h"
#include "tandem/data_sources.h"
#include "tandem/errors.h"

namespace tandem::datasets {
namespace {

struct Column {
  std::string name;
  TensorType row;  // one row's shape and dtype
};

class Hdf5Source final : public Source {
 public:
  Hdf5Source(const std::string& path, const Hdf5SourceOptions& o) : file_(open(path)), o_(o) {
    const std::string who = "hdf5_source";
    const TensorType xt = data::hdf5_column(file_, o.x_dataset, DType::F32, "x", who);
    const TensorType yt = data::hdf5_column(file_, o.y_dataset, DType::I32, "y", who);
    data::check_hdf5_rows(xt.shape, yt.shape, o.x_dataset, o.y_dataset, who + ": " + path);
    rows_ = xt.shape[0];
    for (const auto& [name, t] : {std::pair{o.x_dataset, xt}, std::pair{o.y_dataset, yt}}) {
      const auto& d = t.shape.dims();
      columns_.push_back({name, {Shape(std::vector<int64_t>(d.begin() + 1, d.end())), t.dtype}});
    }
    if (o.block_rows < 0 || o.cached_blocks < 1)
      throw ValueError(who + "(\"" + path + "\"): block_rows must be >= 0 and cached_blocks >= 1, got " + std::to_string(o.block_rows) +
                       " and " + std::to_string(o.cached_blocks));
    const std::size_t row_bytes = std::max<std::size_t>(1, columns_[0].row.bytes() + columns_[1].row.bytes());
    block_ = o.block_rows ? o.block_rows : std::max<int64_t>(1, static_cast<int64_t>((std::size_t{1} << 20) / row_bytes));
  }

  int64_t size() const override { return rows_; }
  SampleType sample_type() const override { return {{columns_[0].row}, {columns_[1].row}}; }

  void read(int64_t index, std::span<std::byte* const> out) const override {
    data::check_read(*this, index, out.size(), 2);
    const int64_t b = index / block_;
    const std::lock_guard<std::mutex> lock(mutex_);
    auto it = std::find_if(cache_.begin(), cache_.end(), [&](const Block& k) { return k.index == b; });
    if (it == cache_.end()) {
      if (static_cast<int64_t>(cache_.size()) >= o_.cached_blocks) cache_.pop_back();
      cache_.push_front(load(b));
    } else {
      cache_.splice(cache_.begin(), cache_, it);  // most recently used first
    }
    const Block& block = cache_.front();
    for (std::size_t c = 0; c < 2; ++c) {
      const std::size_t bytes = columns_[c].row.bytes();
      std::memcpy(out[c], block.data[c].data() + static_cast<std::size_t>(index - b * block_) * bytes, bytes);
    }
  }

  std::string describe() const override {
    return "HDF5 file \"" + file_.path() + "\" (datasets \"" + o_.x_dataset + "\" and \"" + o_.y_dataset + "\")";
  }

 private:
  struct Block {
    int64_t index;
    std::vector<std::byte> data[2];
  };

  static io::H5File open(const std::string& path) {
    try {
      return io::H5File::open(path);
    } catch (const Error& e) {
      throw DataError(path, std::string("hdf5_source: ") + e.what());
    }
  }

  Block load(int64_t b) const {
    Block block{b, {}};
    const int64_t first = b * block_, count = std::min(block_, rows_ - first);
    for (std::size_t c = 0; c < 2; ++c) {
      block.data[c].resize(static_cast<std::size_t>(count) * columns_[c].row.bytes());
      try {
        file_.read_rows_into(columns_[c].name, first, count, columns_[c].row.dtype, block.data[c].data());
      } catch (const Error& e) {
        throw DataError(file_.path(), describe() + ": " + e.what());
      }
    }
    return block;
  }

  io::H5File file_;
  Hdf5SourceOptions o_;
  std::vector<Column> columns_;
  int64_t rows_ = 0, block_ = 1;
  mutable std::mutex mutex_;
  mutable std::list<Block> cache_;
};

}  // namespace

std::shared_ptr<Source> hdf5_source(const std::string& path, const Hdf5SourceOptions& options) {
  return std::make_shared<Hdf5Source>(path, options);
}

}  // namespace tandem::datasets
