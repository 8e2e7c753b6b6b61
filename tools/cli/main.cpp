// SPDX-License-Identifier: MIT
// The latentaudit command-line tool (placeholder entry point; subcommands land in cli_*.cpp).
#include <latentaudit/latentaudit.hpp>

#include <cstdio>

int main() {
  std::puts(latentaudit::version_string);
  return 0;
}
