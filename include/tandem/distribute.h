// Distribution strategies: how a compiled model is lowered onto devices.
#pragma once

#include <memory>
#include <string>

namespace tandem::distribute {

class Strategy;  // defined in the library; users only construct and pass it
using StrategyPtr = std::shared_ptr<Strategy>;

// One device ("cpu", "cpu:0"): the whole program runs there, on all of this machine's cores.
StrategyPtr Default(const std::string& device = "cpu:0");

}  // namespace tandem::distribute
