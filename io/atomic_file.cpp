// Atomic replacement: mkstemp in the target's folder, write, fsync, rename, fsync the folder.
#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "tandem/errors.h"

namespace tandem::io {

namespace {

// check_writable_folder's temporary: this prefix and mkstemp's six characters.
constexpr std::string_view kWriteProbePrefix = ".tandem-write-check-";

std::string folder_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
  throw Error(path + ": " + what + ": " + std::strerror(err));
}

// Permissions a newly created file would get: 0666 less the process's umask (read without
// changing it, from /proc; 0644 where that is not available).
mode_t default_mode() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(0666 & ~std::stoul(line.substr(6), nullptr, 8));
  return 0644;
}

void sync_fd_path(const std::string& path, int flags, const char* what) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) fail(path, std::string("cannot open to sync ") + what, errno);
  const bool ok = ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) fail(path, std::string("cannot sync ") + what + " to disk", err);
}

}  // namespace

void sync_to_disk(const std::string& path) { sync_fd_path(path, O_RDONLY, "the file"); }

void create_folders(const std::string& folder, const std::string& who) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (folder.empty() || fs::is_directory(folder, ec)) return;
  fs::create_directories(folder, ec);
  if (ec) throw Error(who + ": cannot create the folder " + folder + ": " + ec.message());
  fs::path created = fs::absolute(folder);
  if (!created.has_filename()) created = created.parent_path();  // "dir/"
  sync_fd_path(created.parent_path().string(), O_RDONLY | O_DIRECTORY, "the folder");  // the new entry survives a crash too
}

bool is_write_probe(std::string_view file_name) {
  return file_name.starts_with(kWriteProbePrefix) && file_name.size() == kWriteProbePrefix.size() + 6;  // mkstemp's six characters
}

void check_writable_folder(const std::string& folder, const std::string& who) {
  create_folders(folder, who);
  std::string probe = folder + "/" + std::string(kWriteProbePrefix) + "XXXXXX";
  std::vector<char> name(probe.begin(), probe.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) throw Error(who + ": cannot write in the folder " + folder + ": " + std::strerror(errno));
  ::close(fd);
  ::unlink(name.data());
}

void write_file(const std::string& path, const void* data, std::size_t bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) fail(path, "cannot open the file for writing", errno);
  const auto* p = static_cast<const char*>(data);
  std::size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::write(fd, p + done, bytes - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      fail(path, "cannot write the file (" + std::to_string(done) + " of " + std::to_string(bytes) + " bytes written)", err);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) fail(path, "cannot finish writing the file", errno);
}

void write_atomically(const std::string& path, const std::function<void(const std::string& temp_path)>& write) {
  if (path.empty()) throw Error("cannot write a file with an empty path");
  if (path.back() == '/') throw Error(path + ": is a directory, not a file path");
  struct stat target{};
  const bool target_exists = ::stat(path.c_str(), &target) == 0;
  if (target_exists && S_ISDIR(target.st_mode)) throw Error(path + ": is a directory");
  const mode_t mode = target_exists ? (target.st_mode & 07777) : default_mode();

  const std::string folder = folder_of(path);
  std::string temp = folder + "/." + base_of(path) + ".tmp-XXXXXX";
  std::vector<char> name(temp.begin(), temp.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) fail(path, "cannot create a temporary file in " + folder, errno);
  temp = name.data();
  ::close(fd);
  try {
    write(temp);
    if (::chmod(temp.c_str(), mode) != 0) fail(temp, "cannot set permissions", errno);
    sync_to_disk(temp);
    if (::rename(temp.c_str(), path.c_str()) != 0) fail(path, "cannot replace the file", errno);
  } catch (const Error& e) {
    ::unlink(temp.c_str());
    throw Error(path + (target_exists ? ": not saved (the file there is unchanged): " : ": not saved: ") + e.what());
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
  // The rename is durable only once the folder's entry is on disk.
  sync_fd_path(folder, O_RDONLY | O_DIRECTORY, "the folder");
}

}  // namespace tandem::io
