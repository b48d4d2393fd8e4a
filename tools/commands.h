// The `tessera` subcommands, one file each (cmd_<name>.cpp). Each adds itself
// to the CLI11 app; its callback throws tessera::Error on failure and main()
// turns that into one line on stderr and exit code 1.
#pragma once

namespace CLI {
class App;
}

namespace tessera::tools {

void add_run_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_ops_command(CLI::App& app);
void add_profile_command(CLI::App& app);
void add_bench_command(CLI::App& app);

}  // namespace tessera::tools
