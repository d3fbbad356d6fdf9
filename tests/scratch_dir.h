// Scratch folders for tests: one folder per test program (named with the process id, so parallel
// runs do not meet) holding a fresh, empty folder per test; the whole tree goes when the program ends.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

class ScratchRoot {
 public:
  explicit ScratchRoot(const std::string& program)
      : root_(std::filesystem::temp_directory_path() / (program + "_" + std::to_string(::getpid()))) {}
  ScratchRoot(const ScratchRoot&) = delete;
  ScratchRoot& operator=(const ScratchRoot&) = delete;
  ~ScratchRoot() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  // An empty folder `name` (emptied if a test used it before).
  std::filesystem::path fresh(const std::string& name) const {
    const std::filesystem::path p = root_ / name;
    std::filesystem::remove_all(p);
    std::filesystem::create_directories(p);
    return p;
  }

 private:
  std::filesystem::path root_;
};
