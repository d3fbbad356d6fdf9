// Runs a shell command (a test's child program) and keeps what it printed, stdout and stderr.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <stdexcept>
#include <string>

struct CommandResult {
  bool exited = false;  // ended by exit(), not by a signal
  int exit_code = -1;
  std::string output;
};

inline CommandResult run_command(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot run " + command);
  CommandResult r;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe)) r.output += buf;
  const int status = ::pclose(pipe);
  r.exited = WIFEXITED(status);
  if (r.exited) r.exit_code = WEXITSTATUS(status);
  return r;
}
