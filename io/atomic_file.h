// Replacing a file all at once: readers see either the old file or the complete new one, never a
// half-written one, even if the process dies or the machine loses power while writing.
#pragma once

#include <functional>
#include <string>

namespace tandem::io {

// `write(temp_path)` fills a new temporary file in the same folder as `path`; the temporary is then
// synced to disk and renamed over `path`, and the folder is synced. If `write` throws or any step
// fails, the temporary is removed, `path` is left untouched and a tandem::Error (or `write`'s own
// exception) is thrown. The new file gets the old file's permissions, or the umask's defaults.
void write_atomically(const std::string& path, const std::function<void(const std::string& temp_path)>& write);

// Flushes a file's data and metadata to disk (fsync). Throws tandem::Error naming the path.
void sync_to_disk(const std::string& path);

}  // namespace tandem::io
