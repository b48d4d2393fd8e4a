// What the CPU we run on can do, read once (cpuid + xgetbv on x86).
#pragma once

#include <string>

namespace tessera {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512vnni = false, avx512bf16 = false;
  bool avx512vbmi = false;  // vpermb (coded weights' decoding)
  bool amx_bf16 =
      false;  // AMX-TILE + AMX-BF16 with the tile state enabled in XCR0 (the f32 GEMM's bf16x6 path)
  // AuthenticAMD: where a kernel's best choice measured differently on AMD (Zen 3/4) and Intel.
  bool amd = false;
  // Per-core L2 size in bytes (the OS's report; 1 MiB where it gives none): GEMM cache blocking.
  long l2_bytes = 1 << 20;
  // Last-level (L3) cache in bytes (the OS's report; 8 MiB where it gives none): whether weights stay cached
  // from run to run.
  long l3_bytes = 8 << 20;
  // What the avx512f kernel folders are compiled for (-mavx512f/bw/vl/dq): dispatch to them needs all four.
  bool avx512_core() const { return avx512f && avx512bw && avx512vl && avx512dq; }
  std::string describe() const;
};

// Honors TESSERA_ISA=portable|avx2|avx512 to force a lower level (for tests).
const CpuFeatures& cpu_features();

}  // namespace tessera
