#include "data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "tandem/errors.h"

namespace tandem::data {
namespace {

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

// Reads up to n bytes into out, stopping early only at end of data.
std::size_t read_some(gzFile f, const std::string& path, uint8_t* out, std::size_t n) {
  std::size_t got = 0;
  while (got < n) {
    const unsigned want = static_cast<unsigned>(std::min<std::size_t>(n - got, 1u << 20));
    const int r = gzread(f, out + got, want);
    if (r < 0) {
      int code = 0;
      throw Error("read_idx: " + path + ": corrupt gzip data (" + gzerror(f, &code) + ")");
    }
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  return got;
}

uint32_t big_endian(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::string hex_bytes(const uint8_t* p, std::size_t n) {
  std::string s;
  char buf[4];
  for (std::size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, i ? " %02x" : "%02x", p[i]);
    s += buf;
  }
  return s;
}

}  // namespace

Tensor read_idx(const std::string& path) {
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) throw Error("read_idx: cannot open " + path + " (missing or unreadable)");

  uint8_t magic[4];
  const std::size_t got_magic = read_some(f.get(), path, magic, 4);
  if (got_magic < 4)
    throw Error("read_idx: " + path + ": expected a 4-byte magic number, file has " +
                std::to_string(got_magic) + " bytes");
  const bool images = magic[0] == 0 && magic[1] == 0 && magic[2] == 8 && magic[3] == 3;
  const bool labels = magic[0] == 0 && magic[1] == 0 && magic[2] == 8 && magic[3] == 1;
  if (!images && !labels)
    throw Error("read_idx: " + path + ": expected magic 00 00 08 03 (images) or 00 00 08 01 (labels), got " +
                hex_bytes(magic, 4));

  const std::size_t ndims = images ? 3 : 1;
  uint8_t header[12];
  const std::size_t got_header = read_some(f.get(), path, header, 4 * ndims);
  if (got_header < 4 * ndims)
    throw Error("read_idx: " + path + ": expected " + std::to_string(4 * ndims) + " bytes of dimensions, got " +
                std::to_string(got_header));
  std::vector<int64_t> dims(ndims);
  uint64_t count = 1;
  for (std::size_t i = 0; i < ndims; ++i) {
    dims[i] = big_endian(header + 4 * i);
    count *= static_cast<uint64_t>(dims[i]);  // at most 2^96 in principle; see the cap below
    if (count > (uint64_t{1} << 40))
      throw Error("read_idx: " + path + ": header declares an implausibly large tensor");
  }

  // Grow the buffer as data arrives so a lying header cannot force a huge allocation up front.
  std::vector<uint8_t> bytes;
  std::size_t have = 0;
  while (have < count) {
    bytes.resize(std::min<std::size_t>(count, std::max<std::size_t>(have * 2, 1u << 20)));
    const std::size_t got = read_some(f.get(), path, bytes.data() + have, bytes.size() - have);
    have += got;
    if (have < bytes.size()) break;
  }
  std::string declared;
  for (std::size_t i = 0; i < ndims; ++i) {
    if (i) declared += 'x';
    declared += std::to_string(dims[i]);
  }
  if (have < count)
    throw Error("read_idx: " + path + ": truncated: header declares " + declared + " = " + std::to_string(count) +
                " bytes of data, file has " + std::to_string(have));
  uint8_t extra;
  if (read_some(f.get(), path, &extra, 1) != 0)
    throw Error("read_idx: " + path + ": header declares " + declared + " = " + std::to_string(count) +
                " bytes of data, but the file has more");

  if (images) {
    Tensor t(Shape(dims), DType::F32);
    float* out = t.data<float>();
    for (uint64_t i = 0; i < count; ++i) out[i] = static_cast<float>(bytes[i]) * (1.0f / 255.0f);
    return t;
  }
  Tensor t(Shape(dims), DType::I32);
  int32_t* out = t.data<int32_t>();
  for (uint64_t i = 0; i < count; ++i) out[i] = bytes[i];
  return t;
}

}  // namespace tandem::data
