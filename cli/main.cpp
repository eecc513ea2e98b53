#include "cli/app.hpp"

int main(int argc, char** argv) { return dedupctl::cli::run(argc, argv); }
