// Reads TensorBoard event files for the tests, independently of io/event_file: TFRecord framing
// checked with a bit-by-bit CRC32C, and the protocol buffer wire format read field by field into
// the few Event, Summary, HistogramProto, SummaryMetadata and TensorProto fields Tandem writes.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "io/event_file.h"

namespace event_records {

namespace fs = std::filesystem;

// CRC-32C one bit at a time, straight from the polynomial (the writer uses a table).
inline uint32_t crc32c_bitwise(const std::string& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : bytes) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

inline uint32_t masked(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

inline uint64_t le(const std::string& s, std::size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(s[at + static_cast<std::size_t>(i)]);
  return v;
}

// The records of a TFRecord file; `partial_tail` is set when it ends inside a record.
struct Records {
  std::vector<std::string> data;
  bool partial_tail = false;
};

inline Records read_records(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Records r;
  std::size_t at = 0;
  while (at < file.size()) {
    if (file.size() - at < 12) return r.partial_tail = true, r;
    const uint64_t length = le(file, at, 8);
    REQUIRE(static_cast<uint32_t>(le(file, at + 8, 4)) == masked(crc32c_bitwise(file.substr(at, 8))));
    if (file.size() - at < 16 + length) return r.partial_tail = true, r;
    const std::string data = file.substr(at + 12, length);
    REQUIRE(static_cast<uint32_t>(le(file, at + 12 + length, 4)) == masked(crc32c_bitwise(data)));
    r.data.push_back(data);
    at += 16 + length;
  }
  return r;
}

// A protocol buffer message as its fields: number -> each occurrence's varint, fixed or bytes.
struct Field {
  int wire_type = 0;
  uint64_t number = 0;  // varint, fixed32 or fixed64 bits
  std::string bytes;    // length-delimited
};
inline std::multimap<int, Field> fields_of(const std::string& m) {
  std::multimap<int, Field> out;
  std::size_t at = 0;
  auto varint = [&] {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      REQUIRE(at < m.size());
      const auto b = static_cast<unsigned char>(m[at++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  };
  while (at < m.size()) {
    const uint64_t key = varint();
    Field f{static_cast<int>(key & 7)};
    if (f.wire_type == 0) f.number = varint();
    else if (f.wire_type == 1) f.number = le(m, at, 8), at += 8;
    else if (f.wire_type == 5) f.number = le(m, at, 4), at += 4;
    else if (f.wire_type == 2) {
      const uint64_t n = varint();
      f.bytes = m.substr(at, n), at += n;
    } else FAIL("unexpected wire type " << f.wire_type);
    REQUIRE(at <= m.size());
    out.emplace(static_cast<int>(key >> 3), f);
  }
  return out;
}

inline double as_double(uint64_t bits) { double d; std::memcpy(&d, &bits, 8); return d; }
inline float as_float(uint64_t bits) { const auto b = static_cast<uint32_t>(bits); float f; std::memcpy(&f, &b, 4); return f; }
inline std::vector<double> packed_doubles(const std::string& bytes) {
  std::vector<double> v;
  for (std::size_t i = 0; i + 8 <= bytes.size(); i += 8) v.push_back(as_double(le(bytes, i, 8)));
  return v;
}

struct Event {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version, tag;
  std::optional<float> scalar;
  std::optional<tandem::io::Histogram> histogram;
  std::string plugin;                       // SummaryMetadata.plugin_data.plugin_name
  int64_t data_class = 0;                   // SummaryMetadata.data_class
  int64_t tensor_dtype = 0;                 // TensorProto.dtype
  std::vector<int64_t> tensor_shape;        // TensorProto.tensor_shape.dim.size
  std::vector<std::string> tensor_strings;  // TensorProto.string_val
};

inline Event decode(const std::string& record) {
  Event e;
  for (const auto& [n, f] : fields_of(record)) {
    if (n == 1) e.wall_time = as_double(f.number);
    else if (n == 2) e.step = static_cast<int64_t>(f.number);
    else if (n == 3) e.file_version = f.bytes;
    else if (n == 5) {  // Summary: one value each here
      const auto values = fields_of(f.bytes);
      REQUIRE(values.count(1) == 1);
      for (const auto& [vn, vf] : fields_of(values.find(1)->second.bytes)) {
        if (vn == 1) e.tag = vf.bytes;
        else if (vn == 2) e.scalar = as_float(vf.number);
        else if (vn == 5) {
          tandem::io::Histogram h;
          for (const auto& [hn, hf] : fields_of(vf.bytes)) {
            if (hn == 1) h.min = as_double(hf.number);
            if (hn == 2) h.max = as_double(hf.number);
            if (hn == 3) h.num = as_double(hf.number);
            if (hn == 4) h.sum = as_double(hf.number);
            if (hn == 5) h.sum_squares = as_double(hf.number);
            if (hn == 6) h.bucket_limit = packed_doubles(hf.bytes);
            if (hn == 7) h.bucket = packed_doubles(hf.bytes);
          }
          e.histogram = h;
        } else if (vn == 9) {
          for (const auto& [mn, mf] : fields_of(vf.bytes)) {
            if (mn == 1) e.plugin = fields_of(mf.bytes).find(1)->second.bytes;
            if (mn == 4) e.data_class = static_cast<int64_t>(mf.number);
          }
        } else if (vn == 8) {
          for (const auto& [tn, tf] : fields_of(vf.bytes)) {
            if (tn == 1) e.tensor_dtype = static_cast<int64_t>(tf.number);
            if (tn == 2)
              for (const auto& [dn, df] : fields_of(tf.bytes)) e.tensor_shape.push_back(static_cast<int64_t>(fields_of(df.bytes).find(1)->second.number));
            if (tn == 8) e.tensor_strings.push_back(tf.bytes);
          }
        } else FAIL("unexpected Summary.Value field " << vn);
      }
    }
  }
  return e;
}

// The one event file in `folder`: its name as Keras's, its first event the file version; the rest.
inline std::vector<Event> events_in(const fs::path& folder) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(folder)) files.push_back(entry.path());
  REQUIRE(files.size() == 1);
  CHECK(std::regex_match(files[0].filename().string(), std::regex(R"(events\.out\.tfevents\.\d{10}\..+\.\d+\.\d+\.v2)")));
  const Records records = read_records(files[0]);
  CHECK_FALSE(records.partial_tail);
  REQUIRE(!records.data.empty());
  const Event first = decode(records.data[0]);
  CHECK(first.file_version == "brain.Event:2");
  std::vector<Event> events;
  const double now = static_cast<double>(std::time(nullptr));
  for (std::size_t i = 1; i < records.data.size(); ++i) {
    events.push_back(decode(records.data[i]));
    CHECK(std::abs(events.back().wall_time - now) < 600);
  }
  return events;
}

// tag -> step -> the scalar written.
inline std::map<std::string, std::map<int64_t, float>> scalars(const std::vector<Event>& events) {
  std::map<std::string, std::map<int64_t, float>> out;
  for (const Event& e : events)
    if (e.scalar) {
      CHECK(out[e.tag].count(e.step) == 0);
      out[e.tag][e.step] = *e.scalar;
    }
  return out;
}

}  // namespace event_records
