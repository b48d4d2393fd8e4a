// Inputs for a model run from the command line: NAME=FILE.npy where given,
// random data of the declared type elsewhere, with symbolic dims set by
// --dim NAME=VALUE (unset ones become 1). Shared by run, profile and bench.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/tessera.h"

namespace tessera::tools {

std::map<std::string, DataValue> make_feeds(const Session& session, const std::vector<std::string>& input_specs,
                                            const std::vector<std::string>& dim_specs, uint64_t seed);

// Median and 90th percentile of samples (sorted copy).
double percentile(std::vector<double> v, double q);

}  // namespace tessera::tools
