#pragma once

namespace dedupctl::cli {

// Parses the command line, runs the subcommand and maps every outcome to an exit code
// (dedupctl(1)): the one catch ladder of the program.
int run(int argc, char** argv);

} // namespace dedupctl::cli
