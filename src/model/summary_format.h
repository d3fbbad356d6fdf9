// Text layout of Model::summary(), kept apart from Model so the exact Keras 3 table can be tested
// without building layers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tandem/model.h"

namespace tandem::detail {

struct SummaryRow {
  std::string name, class_name, output_shape;
  int64_t params = 0;
  std::vector<std::string> connected_to;  // "layer[node][tensor]"; empty -> "-" (functional only)
};

struct SummaryTotals {
  int64_t trainable = 0, non_trainable = 0, optimizer = 0;
  int64_t trainable_bytes = 0, non_trainable_bytes = 0, optimizer_bytes = 0;
};

// Keras 3's summary table: sequential models (3 columns, width 88) or functional (adds
// "Connected to", width 108). The "Optimizer params" line appears only when optimizer > 0.
std::string format_summary(const std::string& model_name, const std::vector<SummaryRow>& rows,
                           bool functional, const SummaryTotals& totals);

// A strategy's placement table in the same box style, under a title line, with note lines below.
std::string format_placement(const std::string& title, const std::vector<std::string>& header,
                             const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right,
                             const std::vector<std::string>& notes);

// Model::memory_per_device() as a table in the same style; empty when it is.
std::string format_memory(const std::vector<DeviceMemory>& memory, int64_t batch_rows);

// Pieces of the footer, shared with anything else that prints sizes the Keras way.
std::string group_thousands(int64_t n);     // 203530 -> "203,530"
std::string readable_bytes(double bytes);   // 814120 -> "795.04 KB"

}  // namespace tandem::detail
