// Tar indexing and writing with libarchive (tar_file.h). libarchive parses the headers (ustar, pax
// and GNU long names alike); the data offset of a member is how far libarchive has consumed the
// file when it returns the member's header, since it reads the data only when asked.
#include "io/tar_file.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <memory>

#include "tandem/errors.h"

namespace tandem::io {
namespace {

constexpr int64_t kBlock = 512;

int64_t round_up(int64_t n) { return (n + kBlock - 1) / kBlock * kBlock; }

std::string reason(archive* a) {
  const char* s = archive_error_string(a);
  return s ? s : "unknown libarchive error";
}

// libarchive returns null when an allocation fails, and any call on a null handle ends the process
// (its handle check calls exit): a failed allocation must stop here, as the exception it is.
template <class T>
T* allocated(T* p) {
  if (!p) throw std::bad_alloc();
  return p;
}

struct ReadArchive {
  archive* a = allocated(archive_read_new());
  ~ReadArchive() { archive_read_free(a); }
};

bool all_zero(const std::vector<uint8_t>& bytes) {
  for (uint8_t b : bytes)
    if (b) return false;
  return true;
}
}  // namespace

std::vector<TarMember> index_tar(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error("tar " + path + ": cannot open the file: " + std::strerror(errno));
  const auto file_size = static_cast<int64_t>(st.st_size);
  ReadArchive r;
  // Plain tar only: a compressed tar has no byte offsets to read members by.
  archive_read_support_format_tar(r.a);
  // Reads of one tar record (10240 bytes): about a header each for members of that size or more,
  // whose data libarchive then seeks over.
  if (archive_read_open_filename(r.a, path.c_str(), 10240) != ARCHIVE_OK)
    throw Error("tar " + path + ": not a readable uncompressed tar: " + reason(r.a));
  std::vector<TarMember> members;
  int64_t end = 0;  // where the last member's padded data ends
  for (;;) {
    archive_entry* entry = nullptr;
    const int status = archive_read_next_header(r.a, &entry);
    if (status == ARCHIVE_EOF) break;
    if (status < ARCHIVE_WARN) {
      if (members.empty()) throw Error("tar " + path + ": not a readable uncompressed tar: " + reason(r.a));
      throw Error("tar " + path + ": truncated or damaged after member \"" + members.back().name + "\": " + reason(r.a));
    }
    const int64_t offset = archive_filter_bytes(r.a, 0);
    const int64_t size = archive_entry_size_is_set(entry) ? archive_entry_size(entry) : 0;
    // UTF-8 whatever the process's locale (pax stores names so); the stored bytes otherwise.
    const char* name = archive_entry_pathname_utf8(entry);
    if (!name) name = archive_entry_pathname(entry);
    const std::string member = name ? name : "";
    if (offset < 0 || size < 0 || offset + size > file_size)
      throw Error("tar " + path + ": member \"" + member + "\": truncated: its data ends at byte " + std::to_string(offset + size) +
                  " but the file has " + std::to_string(file_size) + " bytes");
    end = round_up(offset + size);
    if (archive_entry_filetype(entry) == AE_IFREG) members.push_back({member, offset, size});
  }
  // A complete tar ends with two zero blocks; a file cut at a member boundary lacks them.
  const std::string last = members.empty() ? "" : " after member \"" + members.back().name + "\"";
  if (file_size < end + 2 * kBlock || !all_zero(read_file_range(path, end, 2 * kBlock, "end-of-archive blocks")))
    throw Error("tar " + path + ": truncated: no end-of-archive blocks" + last + " (the file has " + std::to_string(file_size) +
                " bytes)");
  return members;
}

RangeReader::RangeReader(const std::string& path) : path_(path), fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
  if (fd_ < 0) throw Error("tar " + path + ": cannot open the file: " + std::strerror(errno));
}

RangeReader::~RangeReader() { ::close(fd_); }

std::vector<uint8_t> RangeReader::read(int64_t offset, int64_t size, const std::string& what) const {
  std::vector<uint8_t> out(static_cast<std::size_t>(size));
  int64_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd_, out.data() + done, static_cast<std::size_t>(size - done), static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("tar " + path_ + ": " + what + ": cannot read: " + std::strerror(errno));
    if (n == 0)
      throw Error("tar " + path_ + ": " + what + ": truncated: the file ends at byte " + std::to_string(offset + done) + ", " +
                  std::to_string(size - done) + " bytes short");
    done += n;
  }
  return out;
}

std::vector<uint8_t> read_file_range(const std::string& path, int64_t offset, int64_t size, const std::string& what) {
  return RangeReader(path).read(offset, size, what);
}

TarWriter::TarWriter(const std::string& path) : path_(path) {
  archive* a = allocated(archive_write_new());
  archive_ = a;
  if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK || archive_write_open_filename(a, path.c_str()) != ARCHIVE_OK) {
    const std::string why = reason(a);
    archive_write_free(a);
    archive_ = nullptr;
    throw Error("tar " + path + ": cannot create the file: " + why);
  }
}

TarWriter::~TarWriter() {
  if (archive_) archive_write_free(static_cast<archive*>(archive_));  // closes too
}

void TarWriter::add(const std::string& name, std::span<const uint8_t> data) {
  auto* a = static_cast<archive*>(archive_);
  if (!a) throw Error("tar " + path_ + ": the writer is closed");
  std::unique_ptr<archive_entry, void (*)(archive_entry*)> entry(allocated(archive_entry_new()), archive_entry_free);
  archive_entry_set_pathname(entry.get(), name.c_str());
  archive_entry_set_size(entry.get(), static_cast<la_int64_t>(data.size()));
  archive_entry_set_filetype(entry.get(), AE_IFREG);
  archive_entry_set_perm(entry.get(), 0644);
  archive_entry_set_mtime(entry.get(), 0, 0);
  if (archive_write_header(a, entry.get()) != ARCHIVE_OK ||
      (!data.empty() && archive_write_data(a, data.data(), data.size()) != static_cast<la_ssize_t>(data.size())))
    throw Error("tar " + path_ + ": cannot write member \"" + name + "\": " + reason(a));
}

void TarWriter::close() {
  auto* a = static_cast<archive*>(archive_);
  if (!a) return;
  const int status = archive_write_close(a);
  const std::string why = status == ARCHIVE_OK ? "" : reason(a);
  archive_write_free(a);
  archive_ = nullptr;
  if (status != ARCHIVE_OK) throw Error("tar " + path_ + ": cannot finish the file: " + why);
}

}  // namespace tandem::io
