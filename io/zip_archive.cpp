// The libzip wrapper. Each libzip object is owned by one scope and discarded on every error path.
#include "io/zip_archive.h"

#include <zip.h>

#include <cstring>
#include <fstream>
#include <memory>

#include "tandem/errors.h"

namespace tandem::io {

namespace {

std::string archive_error(zip_t* z) { return zip_error_strerror(zip_get_error(z)); }

// An archive opened by zip_open; closed without writing (zip_discard) unless committed.
struct Archive {
  zip_t* z = nullptr;
  Archive(const std::string& path, int flags) {
    int code = 0;
    z = zip_open(path.c_str(), flags, &code);
    if (!z) {
      zip_error_t e;
      zip_error_init_with_code(&e, code);
      const std::string reason = zip_error_strerror(&e);
      zip_error_fini(&e);
      // read_zip opens only files that start as a zip archive does: the rest is missing or damaged.
      if (flags & ZIP_RDONLY)
        throw Error(path + " is not a readable Keras archive: it starts as a zip archive (a `.keras` file is one), but it is " +
                    "damaged or truncated (libzip: " + reason + ")");
      throw Error(path + ": cannot open the zip archive: " + reason);
    }
  }
  Archive(const Archive&) = delete;
  Archive& operator=(const Archive&) = delete;
  ~Archive() {
    if (z) zip_discard(z);
  }
};

}  // namespace

std::vector<ZipEntry> read_zip(const std::string& path) {
  if (!is_zip_file(path)) {
    if (!std::ifstream(path, std::ios::binary)) throw Error(path + ": cannot open the file: " + std::strerror(errno));
    throw Error(path + ": not a zip archive");
  }
  Archive a(path, ZIP_RDONLY | ZIP_CHECKCONS);
  const zip_int64_t n = zip_get_num_entries(a.z, 0);
  std::vector<ZipEntry> out;
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(a.z, static_cast<zip_uint64_t>(i), 0, &st) != 0)
      throw Error(path + ": entry " + std::to_string(i) + ": " + archive_error(a.z));
    const std::string name = st.name ? st.name : "";
    if (!name.empty() && name.back() == '/') continue;  // a folder
    if (!(st.valid & ZIP_STAT_SIZE) || st.size > (zip_uint64_t(1) << 34))
      throw Error(path + ": " + name + ": the entry's size is missing or implausible");
    std::unique_ptr<zip_file_t, int (*)(zip_file_t*)> f(zip_fopen_index(a.z, static_cast<zip_uint64_t>(i), 0), zip_fclose);
    if (!f) throw Error(path + ": " + name + ": cannot open the entry: " + archive_error(a.z));
    std::string bytes(static_cast<std::size_t>(st.size), '\0');
    zip_int64_t got = 0;
    while (got < static_cast<zip_int64_t>(st.size)) {
      const zip_int64_t r = zip_fread(f.get(), bytes.data() + got, st.size - static_cast<zip_uint64_t>(got));
      if (r < 0) throw Error(path + ": " + name + ": cannot read the entry (damaged?): " + zip_error_strerror(zip_file_get_error(f.get())));
      if (r == 0) break;
      got += r;
    }
    // A last read at the end makes libzip compare the entry's CRC-32.
    char extra;
    if (got != static_cast<zip_int64_t>(st.size) || zip_fread(f.get(), &extra, 1) != 0)
      throw Error(path + ": " + name + ": the entry is damaged (its size or CRC-32 does not match)");
    out.push_back({name, std::move(bytes)});
  }
  return out;
}

void write_zip(const std::string& path, const std::vector<ZipEntry>& entries) {
  Archive a(path, ZIP_CREATE | ZIP_TRUNCATE);
  for (const ZipEntry& e : entries) {
    // The source points at the caller's bytes, which outlive zip_close below.
    zip_source_t* src = zip_source_buffer(a.z, e.bytes.data(), e.bytes.size(), 0);
    if (!src) throw Error(path + ": " + e.name + ": cannot add the entry: " + archive_error(a.z));
    const zip_int64_t at = zip_file_add(a.z, e.name.c_str(), src, ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE);
    if (at < 0) {
      zip_source_free(src);
      throw Error(path + ": " + e.name + ": cannot add the entry: " + archive_error(a.z));
    }
    if (zip_set_file_compression(a.z, static_cast<zip_uint64_t>(at), ZIP_CM_STORE, 0) != 0)
      throw Error(path + ": " + e.name + ": cannot set the entry's compression: " + archive_error(a.z));
  }
  if (zip_close(a.z) != 0) throw Error(path + ": cannot write the zip archive: " + archive_error(a.z));
  a.z = nullptr;
}

bool is_zip_file(const std::string& path) {
  char head[4] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(head, sizeof head) && std::memcmp(head, "PK\x03\x04", 4) == 0;
}

}  // namespace tandem::io
