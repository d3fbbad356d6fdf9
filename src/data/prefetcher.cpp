#include "data/prefetcher.h"

#include <string>

#include "tandem/errors.h"
#include "tandem/watchdog.h"

namespace tandem::data {

namespace {
constexpr auto kWaitSpin = std::chrono::microseconds(20);
}  // namespace

Prefetcher::Prefetcher(const Batcher& batches, const std::vector<bool>& wanted)
    : batches_(batches), thread_(2, core::Clock::duration::zero()) {
  const auto rows = static_cast<std::size_t>(batches.num_batches() ? batches.batch_rows(0) : 0);
  for (Slot& s : slots_) {
    s.columns.resize(batches.columns());
    for (std::size_t c = 0; c < batches.columns(); ++c) {
      const bool want = c < wanted.size() && wanted[c];
      if (want) s.columns[c].resize(rows * batches.row_bytes(c));  // once, for the largest batch
      s.outs.push_back(want ? s.columns[c].data() : nullptr);  // null for zero-byte rows too: nothing to copy
    }
    // Reads s.batch, which gather_into writes before posting.
    s.gather = [this, &s] { batches_.gather(s.batch, s.outs); };
  }
}

void Prefetcher::gather_into(Slot& slot, int64_t b) {
  slot.batch = b;
  slot.ticket = thread_.post(slot.gather);
}

void Prefetcher::start_epoch(int64_t first) {
  if (thread_.posted() > 0) {  // an abandoned epoch may have left a gather running
    const uint64_t last = thread_.posted() - 1;
    try {
      if (!thread_.wait(last, core::Clock::now() + watchdog_timeout()))
        throw TimeoutError("watchdog: the prefetch thread did not finish the previous epoch's gathers within " +
                           std::to_string(watchdog_timeout().count()) + " ms");
    } catch (const TimeoutError&) {
      throw;
    } catch (...) {  // the failed gather of an abandoned epoch was reported then
    }
  }
  for (Slot& s : slots_) s.batch = -1;
  for (int64_t b = first; b < first + 2 && b < batches_.num_batches(); ++b) gather_into(slots_[b % 2], b);
}

Prefetcher::Slot& Prefetcher::ready(int64_t b) {
  Slot& s = slots_[b % 2];
  if (s.batch != b) throw Error("internal: batch " + std::to_string(b) + " was never asked of the prefetcher");
  if (!thread_.wait(s.ticket, core::Clock::now() + watchdog_timeout(), kWaitSpin))
    throw TimeoutError("watchdog: the prefetch thread did not gather batch " + std::to_string(b) + " within " +
                       std::to_string(watchdog_timeout().count()) + " ms");
  return s;
}

const std::byte* Prefetcher::column(int64_t b, std::size_t c) { return ready(b).columns.at(c).data(); }

void Prefetcher::release(int64_t b) {
  Slot& s = slots_[b % 2];
  s.batch = -1;
  if (b + 2 < batches_.num_batches()) gather_into(s, b + 2);
}

}  // namespace tandem::data
