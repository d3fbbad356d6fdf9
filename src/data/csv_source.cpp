// datasets::csv_source: from_csv's rows, one record parsed per read(). The file is read once when
// the source is made, in pieces, by the same parser (io/csv_file.h), keeping each record's offset
// and line; read() reads one record's bytes with pread and parses them again.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "data/csv_columns.h"
#include "data/read_check.h"
#include "tandem/data_sources.h"
#include "tandem/errors.h"

namespace tandem::datasets {
namespace {

constexpr const char* kWho = "csv_source";

class CsvSource final : public Source {
 public:
  CsvSource(const std::string& path, const CsvOptions& o) : path_(path), o_(o) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw DataError(path, std::string(kWho) + ": " + path + ": cannot open the CSV file: " + std::strerror(errno));
    try {
      index();
    } catch (...) {
      ::close(fd_);
      throw;
    }
  }
  ~CsvSource() override { ::close(fd_); }

  int64_t size() const override { return static_cast<int64_t>(offsets_.size()); }
  SampleType sample_type() const override {
    return {{{Shape{static_cast<int64_t>(layout_.features.size())}, DType::F32}}, {{Shape{}, label_dtype_}}};
  }

  void read(int64_t index, std::span<std::byte* const> out) const override {
    data::check_read(*this, index, out.size(), 2);
    const auto i = static_cast<std::size_t>(index);
    const int64_t begin = offsets_[i], end = i + 1 < offsets_.size() ? offsets_[i + 1] : end_;
    std::string bytes(static_cast<std::size_t>(end - begin), '\0');
    for (int64_t done = 0; done < end - begin;) {
      const ssize_t n = ::pread(fd_, bytes.data() + done, static_cast<std::size_t>(end - begin - done), static_cast<off_t>(begin + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        throw DataError(path_, std::string(kWho) + ": " + path_ + ": line " + std::to_string(lines_[i]) +
                                   ": cannot read the record: " + (n < 0 ? std::strerror(errno) : "the file is shorter than when it was indexed"));
      done += n;
    }
    io::CsvRecord record;
    try {
      io::CsvParser parser(path_, o_.delimiter, [&](io::CsvRecord& r, int64_t) {
        if (record.fields.empty()) record = std::move(r);
      }, begin, lines_[i]);
      parser.feed(bytes);
      parser.finish();
      data::check_csv_fields(kWho, path_, record, layout_.count, o_.header);
      float* x = reinterpret_cast<float*>(out[0]);
      for (std::size_t f = 0; f < layout_.features.size(); ++f)
        x[f] = data::csv_number(kWho, path_, record, layout_.features[f], layout_.names).as_float;
      const double label = data::csv_number(kWho, path_, record, layout_.label, layout_.names).value;
      // from_csv's conversion: a float64 tensor of labels cast to the label dtype.
      const Tensor y = Tensor::from(Shape{1}, std::span<const double>(&label, 1)).cast(label_dtype_);
      std::memcpy(out[1], y.raw(), y.bytes());
    } catch (const DataError&) {
      throw;
    } catch (const Error& e) {
      throw DataError(path_, e.what());
    }
  }

  std::string describe() const override { return "CSV file \"" + path_ + "\""; }

 private:
  // One pass over the file: where each record starts, its line, its field count, and (without
  // label_dtype) whether every label is an integer, as from_csv decides the label dtype.
  void index() {
    std::vector<std::string> names;
    std::size_t count = 0;
    bool have_layout = false, all_integer = true;
    const auto on_record = [&](io::CsvRecord& r, int64_t offset) {
      if (o_.header && !have_layout && names.empty()) {
        names = std::move(r.fields);
        count = names.size();
        layout_ = data::csv_layout(kWho, path_, names, count, o_);
        have_layout = true;
        return;
      }
      if (!have_layout) {
        count = r.fields.size();
        layout_ = data::csv_layout(kWho, path_, {}, count, o_);
        have_layout = true;
      }
      try {
        data::check_csv_fields(kWho, path_, r, count, o_.header);
        if (!o_.label_dtype)
          all_integer = all_integer && data::csv_integer_label(data::csv_number(kWho, path_, r, layout_.label, layout_.names));
      } catch (const Error& e) {
        throw DataError(path_, e.what());  // a bad record, not bad options
      }
      offsets_.push_back(offset);
      lines_.push_back(r.line);
    };
    try {
      io::CsvParser parser(path_, o_.delimiter, on_record);
      std::string piece(1 << 20, '\0');
      for (int64_t at = 0;;) {
        const ssize_t n = ::pread(fd_, piece.data(), piece.size(), static_cast<off_t>(at));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw DataError(path_, std::string(kWho) + ": " + path_ + ": cannot read the CSV file: " + std::strerror(errno));
        if (n == 0) {
          end_ = at;
          break;
        }
        parser.feed(std::string_view(piece.data(), static_cast<std::size_t>(n)));
        at += n;
      }
      parser.finish();
    } catch (const ValueError&) {
      throw;  // the options do not fit the file (a column that does not exist)
    } catch (const DataError&) {
      throw;
    } catch (const Error& e) {
      throw DataError(path_, std::string(kWho) + ": " + e.what());
    }
    if (o_.header && !have_layout) throw ValueError(std::string(kWho) + ": " + path_ + ": the file is empty; a header was expected (header=true)");
    if (offsets_.empty()) throw ValueError(std::string(kWho) + ": " + path_ + ": the file has no data rows");
    label_dtype_ = o_.label_dtype.value_or(all_integer ? DType::I32 : DType::F32);
  }

  std::string path_;
  CsvOptions o_;
  int fd_ = -1;
  data::CsvLayout layout_;
  DType label_dtype_ = DType::F32;
  std::vector<int64_t> offsets_, lines_;
  int64_t end_ = 0;
};

}  // namespace

std::shared_ptr<Source> csv_source(const std::string& path, const CsvOptions& options) {
  return std::make_shared<CsvSource>(path, options);
}

}  // namespace tandem::datasets
