// The checksum user block of Tandem's HDF5 files: "TANDEM-WEIGHTS-CHECKSUM 1", the file's size, and the
// CRC-32 of everything after the block.
#include "io/checksum.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <regex>
#include <vector>

#include "tandem/errors.h"

namespace tandem::io {

namespace {

constexpr const char kMagic[] = "TANDEM-WEIGHTS-CHECKSUM 1\n";  // then "bytes N\ncrc32 XXXXXXXX\n"

std::string hex8(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

uint32_t crc_from(std::ifstream& in, std::size_t offset) {
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  std::vector<char> buf(1 << 20);
  uLong crc = crc32(0L, Z_NULL, 0);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto got = in.gcount();
    if (got > 0) crc = crc32(crc, reinterpret_cast<const Bytef*>(buf.data()), static_cast<uInt>(got));
  }
  return static_cast<uint32_t>(crc);
}

std::size_t file_size(std::ifstream& in) {
  in.clear();
  in.seekg(0, std::ios::end);
  return static_cast<std::size_t>(in.tellg());
}

}  // namespace

void write_checksum(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot reopen the file to checksum it");
  const std::size_t size = file_size(in);
  const std::string header = std::string(kMagic) + "bytes " + std::to_string(size) + "\ncrc32 " + hex8(crc_from(in, kChecksumBlock)) + "\n";
  in.close();
  std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
  if (!out || !out.write(header.data(), static_cast<std::streamsize>(header.size())) || !out.flush())
    throw Error(path + ": cannot write the checksum");
}

void verify_checksum(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;  // H5File::open reports it
  const std::size_t size = file_size(in);
  in.seekg(0);
  std::string head(std::min(size, kChecksumBlock), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  const std::string magic = kMagic;
  if (!head.empty() && head.size() < magic.size() && magic.compare(0, head.size(), head) == 0)
    throw Error(path + ": the file is truncated (" + std::to_string(size) + " bytes)");
  if (head.compare(0, magic.size(), magic) != 0) {
    // No block: an HDF5 file as h5py or Keras writes it, or not HDF5 at all (the reader says so).
    // But HDF5 data that starts after a block of exactly our size is a Tandem file whose block
    // was damaged: skipping the check there would accept whatever else was damaged with it.
    static const std::string hdf5_signature("\x89HDF\r\n\x1a\n", 8);
    if (size < kChecksumBlock + hdf5_signature.size() || head.compare(0, hdf5_signature.size(), hdf5_signature) == 0) return;
    std::string at_block(hdf5_signature.size(), '\0');
    in.clear();
    in.seekg(static_cast<std::streamoff>(kChecksumBlock));
    in.read(at_block.data(), static_cast<std::streamsize>(at_block.size()));
    if (at_block == hdf5_signature)
      throw Error(path + ": the file's checksum block is damaged: its HDF5 data starts after Tandem's " + std::to_string(kChecksumBlock) +
                  "-byte block, but the block does not begin with \"" + magic.substr(0, magic.size() - 1) + "\"");
    return;
  }
  static const std::regex fields("bytes ([0-9]{1,19})\ncrc32 ([0-9a-f]{8})\n");
  std::smatch match;
  const std::string rest = head.substr(magic.size(), std::min<std::size_t>(64, head.size() - magic.size()));
  if (!std::regex_search(rest, match, fields) || match.position(0) != 0)
    throw Error(path + ": the file's checksum header is damaged");
  const std::size_t expected = std::stoull(match[1].str());
  if (size < expected)
    throw Error(path + ": the file is truncated: expected " + std::to_string(expected) + " bytes, found " + std::to_string(size));
  if (size != expected)
    throw Error(path + ": the file is damaged: expected " + std::to_string(expected) + " bytes, found " + std::to_string(size));
  const std::string actual = hex8(crc_from(in, kChecksumBlock));
  if (actual != match[2].str())
    throw Error(path + ": the file is corrupted: checksum mismatch (stored crc32 " + match[2].str() + ", computed " + actual + ")");
}

}  // namespace tandem::io
