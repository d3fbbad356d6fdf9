#include "core/device_name.h"

namespace tandem::core {

std::optional<DeviceName> read_device_name(const std::string& name) {
  const auto colon = name.find(':');
  const std::string kind = name.substr(0, colon);
  std::string index = colon == std::string::npos ? "0" : name.substr(colon + 1);
  std::string logical;
  if (const auto slash = index.find('/'); slash != std::string::npos && kind == "gpu") {
    logical = index.substr(slash + 1);
    index = index.substr(0, slash);
  }
  const auto is_number = [](const std::string& s) {
    return !s.empty() && s.size() < 6 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  const bool digits = is_number(index) && (logical.empty() || is_number(logical));
  const bool slash_ok = logical.empty() == (name.find('/') == std::string::npos);
  if (!digits || !slash_ok) return std::nullopt;
  return DeviceName{kind, std::stoi(index), logical.empty() ? -1 : std::stoi(logical)};
}

OnWorker read_worker_prefix(const std::string& name) {
  const std::string prefix = "worker:";
  if (name.rfind(prefix, 0) != 0) return {-1, name};
  const auto slash = name.find('/');
  const std::string number = name.substr(prefix.size(), slash == std::string::npos ? std::string::npos : slash - prefix.size());
  if (slash == std::string::npos || number.empty() || number.size() > 6 || number.find_first_not_of("0123456789") != std::string::npos)
    return {-2, name};
  return {std::stoi(number), name.substr(slash + 1)};
}

}  // namespace tandem::core
