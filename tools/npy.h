// Minimal .npy reader/writer (format version 1.0/2.0/3.0) for the numeric
// dtypes: little-endian, C order. See numpy.lib.format for the layout.
#pragma once

#include <string>

#include "core/tensor.h"

namespace tessera::tools {

// Reads a .npy file into a contiguous tensor. Throws tessera::Error (io,
// invalid_argument) for a missing file, a malformed header, Fortran order,
// big-endian data or an unsupported dtype.
Tensor read_npy(const std::string& path);
// Parses .npy bytes already in memory (`what` names the source in errors).
Tensor parse_npy(const std::string& bytes, const std::string& what);

// Writes a tensor (any numeric dtype; bf16/f8/int4 are written as their raw
// storage type: uint16 / uint8 / int8) as a version 1.0 .npy file.
void write_npy(const std::string& path, const Tensor& t);
std::string encode_npy(const Tensor& t);

// numpy's descr string for a dtype ("<f4"), or "" when numpy has no such type.
std::string npy_descr(DType t);

}  // namespace tessera::tools
