// Running a program as a child process in a test: started with posix_spawn, optionally killed with
// SIGKILL after a delay (the "another process kills it at a random moment" of the resume tests).
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

// Starts `program` with `args` (argv[0] is `program`) and this process's environment plus
// `extra_env` ("NAME=value"); sends it SIGKILL after `kill_after` seconds unless it has exited
// (< 0: never). Returns the wait status.
inline int run_child_process(const std::string& program, const std::vector<std::string>& args,
                             const std::vector<std::string>& extra_env = {}, double kill_after = -1) {
  std::vector<std::string> all = {program}, env = extra_env;
  all.insert(all.end(), args.begin(), args.end());
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  std::vector<char*> argv, envp;
  for (std::string& a : all) argv.push_back(a.data());
  for (std::string& e : env) envp.push_back(e.data());
  argv.push_back(nullptr), envp.push_back(nullptr);
  pid_t pid = 0;
  REQUIRE(::posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv.data(), envp.data()) == 0);
  int status = 0;
  if (kill_after >= 0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kill_after);
    while (std::chrono::steady_clock::now() < deadline) {
      if (::waitpid(pid, &status, WNOHANG) == pid) return status;
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    ::kill(pid, SIGKILL);
  }
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}
