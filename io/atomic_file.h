// Replacing a file all at once: readers see either the old file or the complete new one, never a
// half-written one, even if the process dies or the machine loses power while writing.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace tandem::io {

// `write(temp_path)` fills a new temporary file in the same folder as `path`; the temporary is then
// synced to disk and renamed over `path`, and the folder is synced. If `write` throws or any step
// fails, the temporary is removed, `path` is left untouched and a tandem::Error that names `path`
// and the cause is thrown (or `write`'s own exception, if it is not a tandem::Error). The new file gets the old file's permissions, or the umask's defaults.
void write_atomically(const std::string& path, const std::function<void(const std::string& temp_path)>& write);

// Writes `bytes` bytes to `path` (created or truncated), checking every write: a full disk or a
// file size limit is a tandem::Error naming the path, the reason and how much was written.
void write_file(const std::string& path, const void* data, std::size_t bytes);

// Creates `folder` and any missing parents (nothing to do when it exists) and syncs the entry of a
// new folder to disk. Otherwise a tandem::Error "`who`: cannot create the folder F: <reason>".
void create_folders(const std::string& folder, const std::string& who);

// Creates `folder` as create_folders does, then creates and removes a temporary file in it, so a
// folder that cannot be written is found before work that would be lost: a tandem::Error
// "`who`: cannot write in the folder F: <reason>".
void check_writable_folder(const std::string& folder, const std::string& who);
// Whether a file name is that of check_writable_folder's temporary file, which a process killed
// between creating and removing it leaves behind: its owner removes such leftovers.
bool is_write_probe(std::string_view file_name);

// Flushes a file's data and metadata to disk (fsync). Throws tandem::Error naming the path.
void sync_to_disk(const std::string& path);

}  // namespace tandem::io
