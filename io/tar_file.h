// Tar files as WebDataset shards: an index of a tar's members (names, data offsets and sizes, read
// from the headers with libarchive) so that any member can later be read by offset, from any
// thread; and a writer of tar files. Only uncompressed tars can be read by offset.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tandem::io {

struct TarMember {
  std::string name;    // the full member path, as stored
  int64_t offset = 0;  // where its data starts in the file
  int64_t size = 0;    // its data's size in bytes
};

// The regular-file members of an uncompressed tar, in stored order. Throws tandem::Error naming the
// file for a file that cannot be opened, is not a tar (or is a compressed one), or is truncated:
// a header or a member's data past the end of the file, or no end-of-archive blocks (two zero
// blocks) after the last member.
std::vector<TarMember> index_tar(const std::string& path);

// A file opened read-only for reads by offset (pread: one object may serve several threads).
// Throws tandem::Error naming the file when it cannot be opened, and naming `what` too when a
// read fails or the file is shorter.
class RangeReader {
 public:
  explicit RangeReader(const std::string& path);
  RangeReader(const RangeReader&) = delete;
  RangeReader& operator=(const RangeReader&) = delete;
  ~RangeReader();
  std::vector<uint8_t> read(int64_t offset, int64_t size, const std::string& what) const;

 private:
  std::string path_;
  int fd_;
};

// Reads `size` bytes at `offset` of a file: RangeReader(path).read(offset, size, what).
std::vector<uint8_t> read_file_range(const std::string& path, int64_t offset, int64_t size, const std::string& what);

// Writes a tar (POSIX pax format; plain ustar headers where the names fit) through libarchive.
// Members get mode 0644 and modification time 0, so the same members give the same bytes.
class TarWriter {
 public:
  explicit TarWriter(const std::string& path);  // creates or truncates the file
  TarWriter(const TarWriter&) = delete;
  TarWriter& operator=(const TarWriter&) = delete;
  ~TarWriter();  // closes quietly; call close() to see errors
  void add(const std::string& name, std::span<const uint8_t> data);
  void close();  // writes the end-of-archive blocks and closes the file

 private:
  std::string path_;
  void* archive_ = nullptr;  // struct archive*
};

}  // namespace tandem::io
