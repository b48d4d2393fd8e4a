// What the CPU we run on can do, read once (cpuid + xgetbv on x86).
#pragma once

#include <string>

namespace tessera {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512vnni = false, avx512bf16 = false;
  std::string describe() const;
};

// Honors TESSERA_ISA=portable|avx2|avx512 to force a lower level (for tests).
const CpuFeatures& cpu_features();

}  // namespace tessera
