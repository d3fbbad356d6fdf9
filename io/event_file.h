// TensorBoard event files: TFRecord records (a little-endian uint64 length, the masked CRC32C of the
// length, the data, the masked CRC32C of the data) each holding one `Event` protocol buffer
// (tensorflow/core/util/event.proto). The few messages and field types needed are encoded by hand.
//
// Scalars are written as `Summary.Value.simple_value` and histograms as `HistogramProto`: the forms
// that tensorboard's EventAccumulator reads back as Scalars and Histograms, and that TensorBoard's
// plugins convert to their own (data_compat) for display. Images are written as TensorFlow 2 writes
// them, the form TensorBoard's image plugin reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tandem::io {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), continuing from `crc` (0 to start):
// crc32c("123456789") = 0xE3069283.
uint32_t crc32c(const void* data, std::size_t bytes, uint32_t crc = 0);
// The TFRecord mask: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t masked_crc32c(const void* data, std::size_t bytes);

// One histogram, as TensorBoard's histogram summary buckets a tensor (its numpy and TensorFlow
// versions alike): `bucket_count` buckets of equal width from min to max, a value going to bucket
// floor((v - min) / width) (the maximum into the last); when every value is the same, every limit
// is that value and the last bucket holds them all; no values: all zeros. `bucket_limit[i]` is the
// right edge of bucket i (the last one is max).
struct Histogram {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> bucket_limit, bucket;
};
Histogram make_histogram(std::span<const double> values, int bucket_count = 30);

// Appends events to a new file `folder`/events.out.tfevents.<seconds>.<host>.<pid>.<n>.v2 (the
// folder is created if needed); the first event is the file version "brain.Event:2".
// Each record reaches the file in one write() call, so a process that dies leaves at most one
// partial record at the end, which TensorBoard's reader treats as not yet written; a failed write
// (a full disk) cuts the file back to its last whole record before throwing. sync() flushes the
// file to disk. Errors are tandem::Error naming `who` and the file.
class EventFileWriter {
 public:
  EventFileWriter(const std::string& folder, std::string who);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  void scalar(const std::string& tag, double value, int64_t step);  // stored as float32, as TensorBoard's scalars
  void histogram(const std::string& tag, const Histogram& histogram, int64_t step);
  // Images of one size as TensorFlow 2's image summary writes them (tf.summary.image): a string
  // tensor [width, height, png...] under the "images" plugin.
  void images(const std::string& tag, int64_t width, int64_t height, const std::vector<std::string>& pngs, int64_t step);
  void sync();
  void close();  // syncs and closes; the destructor does the same, ignoring errors
  const std::string& path() const { return path_; }

 private:
  void write_event(int64_t step, const std::string& summary);  // an Event holding an encoded Summary
  void write_record(const std::string& data);
  std::string who_, path_;
  int fd_ = -1;
  uint64_t size_ = 0;  // bytes of whole records written
};

}  // namespace tandem::io
