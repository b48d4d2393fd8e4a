// The loops of norm.h compiled for AVX512F (norm_rows_impl.h): the compiler vectorizes their lanes.
#include <immintrin.h>

#include "kernels/x86/norm.h"

namespace tessera::kernels::x86 {
namespace {
#include "kernels/x86/norm_rows_impl.h"
}  // namespace

const NormRowKernels& norm_row_kernels__avx512f() {
  return kNormRowKernels;
}

}  // namespace tessera::kernels::x86
