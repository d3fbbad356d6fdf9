// What the token-model training benchmarks (bench_transformer, bench_lstm) share: the command
// line, random token windows with their next-token targets, and the timed fit. Each mirrors a
// PyTorch script (bench/torch_*.py) that trains the same model on the same kind of data.
#pragma once

#include <tandem/tandem.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

struct TokenBenchArgs {
  const char* program;    // for messages: "bench_lstm"
  const char* size_flag;  // the model's size argument: "--units", "--blocks"
  int64_t size = 0, batch = 64, steps = 40;
  std::string device = "cpu:0";
  std::string trace;      // --trace FILE: the third timed step as a Chrome trace
  std::string policy;     // --policy NAME: the layers' dtype policy; empty when not given (float32)
  bool json = false;
};

[[noreturn]] inline void token_bench_usage(const TokenBenchArgs& a, const std::string& message) {
  std::fprintf(stderr, "%s: %s\nusage: %s [%s N] [--batch B] [--steps S] [--device cpu:0|gpu:N] [--policy float32|mixed_bfloat16] [--trace FILE] [--json]\n", a.program,
               message.c_str(), a.program, a.size_flag);
  std::exit(2);
}

// The arguments over `defaults`; a bad one ends the program with the usage (exit status 2).
// --policy sets the global dtype policy here, before the program makes any layer (layers take it
// when they are constructed; docs/mixed-precision.md).
inline TokenBenchArgs parse_token_bench_args(int argc, char** argv, TokenBenchArgs a) {
  auto positive = [&](const std::string& flag, const char* text) {
    char* end = nullptr;
    const long long v = std::strtoll(text, &end, 10);
    if (*end != '\0' || v <= 0) token_bench_usage(a, flag + " needs a positive integer, got '" + text + "'");
    return static_cast<int64_t>(v);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) token_bench_usage(a, flag + " needs a value");
      return argv[++i];
    };
    if (flag == a.size_flag) a.size = positive(flag, value());
    else if (flag == "--batch") a.batch = positive(flag, value());
    else if (flag == "--steps") a.steps = positive(flag, value());
    else if (flag == "--device") a.device = value();
    else if (flag == "--trace") a.trace = value();
    else if (flag == "--policy") a.policy = value();
    else if (flag == "--json") a.json = true;
    else token_bench_usage(a, "unknown argument '" + flag + "'");
  }
  if (!a.policy.empty()) {
    try {
      tandem::mixed_precision::set_global_policy(a.policy);
    } catch (const std::exception& e) {
      token_bench_usage(a, std::string("--policy: ").append(e.what()));
    }
  }
  return a;
}

// `rows` random windows of `length` tokens in [0, vocab), each target the next token.
inline tandem::Dataset random_token_windows(int64_t rows, int64_t length, int32_t vocab, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> token(0, vocab - 1);
  std::vector<int32_t> x(static_cast<std::size_t>(rows * length)), y(x.size());
  for (int32_t& v : x) v = token(gen);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = (i + 1) % static_cast<std::size_t>(length) ? x[i + 1] : token(gen);
  return {tandem::Tensor::from({rows, length}, std::span<const int32_t>(x)), tandem::Tensor::from({rows, length}, std::span<const int32_t>(y))};
}

struct TokenBenchTiming {
  double samples_per_s, step_ms;
};

// `warm_up` untimed steps (they compile the step), then args.steps timed ones, on random windows.
inline TokenBenchTiming time_token_training(tandem::Model& model, const TokenBenchArgs& args, int64_t length, int32_t vocab,
                                            int64_t warm_up) {
  const tandem::Dataset warmup = random_token_windows(warm_up * args.batch, length, vocab, 1);
  const tandem::Dataset timed = random_token_windows(args.steps * args.batch, length, vocab, 2);
  model.fit(warmup, {.epochs = 1, .batch_size = args.batch, .verbose = 0});
  const auto t0 = std::chrono::steady_clock::now();
  model.fit(timed, {.epochs = 1, .batch_size = args.batch, .verbose = 0, .trace_path = args.trace, .trace_step = 2});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {double(args.steps * args.batch) / seconds, 1e3 * seconds / double(args.steps)};
}
