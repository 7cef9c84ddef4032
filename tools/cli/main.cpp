// The syntorch binary: the command line over the process's streams. Writing past the file-size
// limit (ulimit -f) is an error the writers report and clean up after, not a SIGXFSZ kill; and
// output that cannot be written (a closed stdout, /dev/full) is an error, not a silent exit 0.

#include <csignal>
#include <iostream>

#include "cli.hpp"

int main(int argc, char** argv) {
  std::signal(SIGXFSZ, SIG_IGN);  // write() then fails with EFBIG, which OutputFile reports
  std::vector<std::string> args(argv + 1, argv + argc);
  int code = syntorch::cli::run(args, std::cout, std::cerr);
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "error: cannot write the output (standard output is closed or its device is full)\n";
    if (code == syntorch::cli::kExitOk) code = syntorch::cli::kExitBadInput;
  }
  return code;
}
