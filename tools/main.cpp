// tessera: the command-line front end (run, info, ops, npu ...).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>

#include "tessera/tessera.h"
#include "tools/commands.h"
#include "tools/npu_commands.h"

namespace {

int fail(const std::string& message) {
  std::string line = message;
  for (char& c : line)
    if (c == '\n' || c == '\r') c = ' ';
  std::fprintf(stderr, "tessera: error: %s\n", line.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Tessera: ONNX compiler, runtime and NPU simulator"};
  app.require_subcommand(1);
  app.set_version_flag("--version", tessera::version());
  tessera::tools::add_run_command(app);
  tessera::tools::add_info_command(app);
  tessera::tools::add_ops_command(app);
  tessera::tools::add_profile_command(app);
  tessera::tools::add_bench_command(app);
  tessera::tools::add_npu_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help / the parse error
    return rc == 0 ? 0 : 2;
  } catch (const tessera::Error& e) {
    return fail(e.what());
  } catch (const std::exception& e) {
    return fail(e.what());
  } catch (...) {
    return fail("unknown failure");
  }
  return 0;
}
