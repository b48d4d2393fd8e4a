// Placeholder: the NPU subcommands land with the NPU simulator.
#include "tools/npu_commands.h"

#include <CLI/CLI.hpp>

namespace tessera::tools {

void add_npu_commands(CLI::App& app) { app.add_subcommand("npu", "NPU simulator (not yet available)"); }

}  // namespace tessera::tools
