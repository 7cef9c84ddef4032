#include <iostream>

#include "cli.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return syntorch::cli::run(args, std::cout, std::cerr);
}
