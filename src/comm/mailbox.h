// Messages between the devices of different workers (processes). Each carries a key that says
// what it is — a transfer from one device to another with its tag, or a group's collective step —
// so that any number of threads of a worker can send and receive at once and each receive finds
// its own message, whatever order the others arrive in.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <string>

namespace tandem::comm {

struct MessageKey {
  uint64_t channel = 0;  // 0: a transfer between two devices; otherwise the collective group's
  int64_t from = 0, to = 0;  // device ranks (a transfer) or workers (a group's step)
  int64_t tag = 0;
  auto operator<=>(const MessageKey&) const = default;
};

class Mailbox {
 public:
  virtual ~Mailbox() = default;
  // Returns at once (the bytes are copied): two workers may both post before they take.
  virtual void post(int worker, const MessageKey& key, const void* data, std::size_t bytes) = 0;
  // The oldest message from `worker` with `key`, which must be `bytes` long. Waits at most the
  // communicator's timeout, then raises an error naming the worker it waited for.
  virtual void take(int worker, const MessageKey& key, void* data, std::size_t bytes) = 0;
  // After a device failed: every waiting and later take throws until reset().
  virtual void abort(const std::string& reason) = 0;
  virtual void reset() = 0;
};

}  // namespace tandem::comm
