// The `tessera npu ...` subcommands (topology, gemm, asm, disasm, run).
#pragma once

namespace CLI {
class App;
}

namespace tessera::tools {

void add_npu_commands(CLI::App& app);

}  // namespace tessera::tools
