// Zip archives (Keras 3's `.keras` files) through libzip: every entry read into memory, or an archive
// written from entries in memory. The archives are small (a model's config and weights), so reading
// everything at once keeps the callers simple. No libzip type appears here.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tandem::io {

struct ZipEntry {
  std::string name;   // "config.json", "model.weights.h5", ...
  std::string bytes;  // the entry's content
};

// Reads every file entry (directories are skipped). Throws tandem::Error naming the path and the
// entry for a missing or unreadable file, a file that is not a zip archive, and damaged entries
// (libzip checks each entry's CRC-32 as it reads).
std::vector<ZipEntry> read_zip(const std::string& path);

// Writes a new archive at `path` (replacing what is there) with the entries stored uncompressed, as
// Keras writes them. Throws tandem::Error naming the path on any failure (a full disk included);
// callers that need all-or-nothing wrap this in write_atomically.
void write_zip(const std::string& path, const std::vector<ZipEntry>& entries);

// Whether the file starts with a zip local-file signature ("PK\3\4").
bool is_zip_file(const std::string& path);

}  // namespace tandem::io
