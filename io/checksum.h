// Tandem's checksum block: the first 512 bytes of an HDF5 file reserved as its user block (HDF5 skips
// it, and so do h5py and Keras) holding the file's size and the CRC-32 of everything after the block,
// so that truncated or damaged files are refused before HDF5 parses them.
#pragma once

#include <cstddef>
#include <string>

namespace tandem::io {

// The user block size to create the file with (H5CreateOptions::userblock).
constexpr std::size_t kChecksumBlock = 512;

// Fills the user block of a finished, closed file with its size and checksum.
void write_checksum(const std::string& path);

// Throws tandem::Error if the file's user block holds a checksum that does not match (truncated,
// extended or corrupted). Files without one (written by Keras or h5py) are left to HDF5.
void verify_checksum(const std::string& path);

}  // namespace tandem::io
