// SPDX-License-Identifier: MIT
// libFuzzer target for the task-file reader (read_task_stream, the path of `audit --tasks`,
// `tokenize --tasks` and the Python task helpers): any byte string, as the contents of a task file,
// must either read or throw a latentaudit::error — never crash, hang or hold more than a line's
// limit. A file that reads writes back (header and task lines) to a file that reads again to the
// same lines.
#include <latentaudit/trial/task_file.hpp>

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace latentaudit;
  const task_file_limits limits{.max_line_bytes = std::size_t{1} << 16};
  task_file f;
  try {
    std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
    f = read_task_stream(in, "tasks.jsonl", limits);
  } catch (const latentaudit::error&) {
    return 0;
  }
  std::string text = task_header_line(f.header) + "\n";
  for (const auto& t : f.tasks) text += task_entry_line(t) + "\n";
  try {
    std::istringstream again(text);
    const task_file back = read_task_stream(again, "tasks.jsonl");  // escapes may lengthen a line
    if (back.tasks.size() != f.tasks.size()) std::abort();
    if (task_header_line(back.header) != task_header_line(f.header)) std::abort();
    for (std::size_t i = 0; i < f.tasks.size(); ++i)
      if (task_entry_line(back.tasks[i]) != task_entry_line(f.tasks[i])) std::abort();
  } catch (const latentaudit::error&) {
    std::abort();  // the reader's own output must read back
  }
  return 0;
}
