// TensorBoard event files (event_file.h).
#include "io/event_file.h"

#include <algorithm>
#include <array>
#include <bit>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <utility>

#include "io/atomic_file.h"
#include "tandem/errors.h"

namespace tandem::io {
namespace {

constexpr std::array<uint32_t, 256> crc32c_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrc32cTable = crc32c_table();

// Protocol buffer wire encoding (developers.google.com/protocol-buffers/docs/encoding): the field
// types event.proto, summary.proto and histogram.proto use here.
class Proto {
 public:
  void varint_field(int field, uint64_t v) { key(field, 0), varint(v); }
  void double_field(int field, double v) { key(field, 1), fixed(v); }
  void float_field(int field, float v) { key(field, 5), fixed(v); }
  void bytes_field(int field, const std::string& bytes) { key(field, 2), varint(bytes.size()), out_ += bytes; }
  void packed_doubles(int field, const std::vector<double>& values) {
    Proto packed;
    for (double v : values) packed.fixed(v);
    bytes_field(field, packed.out_);
  }
  const std::string& bytes() const { return out_; }

 private:
  void key(int field, int wire_type) { varint(static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire_type)); }
  void varint(uint64_t v) {
    for (; v >= 0x80; v >>= 7) out_ += static_cast<char>((v & 0x7f) | 0x80);
    out_ += static_cast<char>(v);
  }
  template <class T> void fixed(T v) {  // little-endian, as the wire format's fixed32/fixed64
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    if constexpr (std::endian::native == std::endian::big) std::reverse(b, b + sizeof(T));
    out_.append(b, sizeof(T));
  }
  std::string out_;
};

void put_le(char* at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) at[i] = static_cast<char>(v >> (8 * i) & 0xff);
}

// A Summary.Value: its tag, then `what` (the value's field, already encoded).
std::string value_of(const std::string& tag, const Proto& what) {
  Proto value;
  value.bytes_field(1, tag);  // Summary.Value.tag
  return value.bytes() + what.bytes();
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || !name[0]) return "localhost";
  return name;
}

std::atomic<int> next_file_number{0};

}  // namespace

uint32_t crc32c(const void* data, std::size_t bytes, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (std::size_t i = 0; i < bytes; ++i) crc = kCrc32cTable[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

uint32_t masked_crc32c(const void* data, std::size_t bytes) {
  const uint32_t crc = crc32c(data, bytes);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

Histogram make_histogram(std::span<const double> values, int bucket_count) {
  Histogram h;
  const auto k = static_cast<std::size_t>(std::max(bucket_count, 0));
  h.bucket_limit.assign(k, 0.0), h.bucket.assign(k, 0.0);
  if (values.empty() || k == 0) return h;
  h.min = h.max = values[0];
  for (double v : values) h.min = std::min(h.min, v), h.max = std::max(h.max, v), h.sum += v, h.sum_squares += v * v;
  h.num = static_cast<double>(values.size());
  const double range = h.max - h.min;
  if (range == 0) {
    h.bucket_limit.assign(k, h.max);
    h.bucket.back() = h.num;
    return h;
  }
  const double width = range / static_cast<double>(k);
  for (double v : values) {
    const double index = std::floor((v - h.min) / width);
    h.bucket[std::min(static_cast<std::size_t>(index), k - 1)] += 1;
  }
  for (std::size_t i = 0; i + 1 < k; ++i) h.bucket_limit[i] = static_cast<double>(i + 1) * width + h.min;  // numpy's linspace
  h.bucket_limit.back() = h.max;
  return h;
}

EventFileWriter::EventFileWriter(const std::string& folder, std::string who) : who_(std::move(who)) {
  create_folders(folder, who_);
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "%010lld", static_cast<long long>(seconds));
  path_ = (folder.empty() ? std::string() : folder + "/") + "events.out.tfevents." + stamp + "." + host_name() + "." +
          std::to_string(::getpid()) + "." + std::to_string(next_file_number++) + ".v2";
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0666);
  if (fd_ < 0) throw Error(who_ + ": cannot create the event file " + path_ + ": " + std::strerror(errno));
  Proto version;
  version.bytes_field(3, "brain.Event:2");  // Event.file_version
  Proto event;
  event.double_field(1, std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  write_record(event.bytes() + version.bytes());
}

EventFileWriter::~EventFileWriter() {
  try {
    close();
  } catch (const std::exception&) {  // a destructor cannot report it; close() does
  }
}

void EventFileWriter::scalar(const std::string& tag, double value, int64_t step) {
  Proto what;
  what.float_field(2, static_cast<float>(value));  // Summary.Value.simple_value
  write_event(step, value_of(tag, what));
}

void EventFileWriter::histogram(const std::string& tag, const Histogram& h, int64_t step) {
  Proto histo;  // HistogramProto
  histo.double_field(1, h.min), histo.double_field(2, h.max), histo.double_field(3, h.num);
  histo.double_field(4, h.sum), histo.double_field(5, h.sum_squares);
  histo.packed_doubles(6, h.bucket_limit), histo.packed_doubles(7, h.bucket);
  Proto what;
  what.bytes_field(5, histo.bytes());  // Summary.Value.histo
  write_event(step, value_of(tag, what));
}

void EventFileWriter::images(const std::string& tag, int64_t width, int64_t height, const std::vector<std::string>& pngs, int64_t step) {
  Proto plugin, metadata;  // SummaryMetadata
  plugin.bytes_field(1, "images"), plugin.bytes_field(2, "");  // PluginData: name, content (ImagePluginData version 0)
  metadata.bytes_field(1, plugin.bytes());
  metadata.varint_field(4, 3);  // data_class: DATA_CLASS_BLOB_SEQUENCE
  Proto dim, shape, tensor;     // TensorProto of dtype DT_STRING, shape [2 + images]
  dim.varint_field(1, 2 + pngs.size());
  shape.bytes_field(2, dim.bytes());
  tensor.varint_field(1, 7);
  tensor.bytes_field(2, shape.bytes());
  tensor.bytes_field(8, std::to_string(width)), tensor.bytes_field(8, std::to_string(height));
  for (const std::string& png : pngs) tensor.bytes_field(8, png);
  Proto what;
  what.bytes_field(9, metadata.bytes()), what.bytes_field(8, tensor.bytes());  // Summary.Value: metadata, tensor
  write_event(step, value_of(tag, what));
}

void EventFileWriter::write_event(int64_t step, const std::string& value) {
  Proto summary, event;
  summary.bytes_field(1, value);  // Summary.value
  event.double_field(1, std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());  // wall_time
  event.varint_field(2, static_cast<uint64_t>(step));                                                                 // step
  event.bytes_field(5, summary.bytes());                                                                              // summary
  write_record(event.bytes());
}

void EventFileWriter::write_record(const std::string& data) {
  if (fd_ < 0) throw Error(who_ + ": the event file " + path_ + " is closed");
  // The whole record in one buffer, so that it goes to the file in one write().
  std::string record(12, '\0');
  put_le(record.data(), data.size(), 8);
  put_le(record.data() + 8, masked_crc32c(record.data(), 8), 4);
  record += data;
  char footer[4];
  put_le(footer, masked_crc32c(data.data(), data.size()), 4);
  record.append(footer, 4);
  std::size_t done = 0;
  while (done < record.size()) {
    const ssize_t n = ::write(fd_, record.data() + done, record.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : ENOSPC;
      // Leaves no partial record before the ones a later write would add.
      const bool cut = done == 0 || ::ftruncate(fd_, static_cast<off_t>(size_)) == 0;
      throw Error(who_ + ": cannot write to the event file " + path_ + ": " + std::strerror(error) +
                  (cut ? "" : " (the file ends with a partial record)"));
    }
    done += static_cast<std::size_t>(n);
  }
  size_ += record.size();
}

void EventFileWriter::sync() {
  if (fd_ >= 0 && ::fsync(fd_) != 0) throw Error(who_ + ": cannot flush the event file " + path_ + " to disk: " + std::strerror(errno));
}

void EventFileWriter::close() {
  if (fd_ < 0) return;
  const int fd = std::exchange(fd_, -1);
  const bool synced = ::fsync(fd) == 0;
  const int error = errno;
  if (::close(fd) != 0 || !synced) throw Error(who_ + ": cannot close the event file " + path_ + ": " + std::strerror(synced ? errno : error));
}

}  // namespace tandem::io
