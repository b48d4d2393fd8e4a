// Tile of any element type, tuned: the input's innermost run is copied whole (and repeated as many times as
// the last axis asks), the outer axes replay the output already written for their first repeat; the
// reference kernel computed a source offset per element through a multi-index (24x onnxruntime's time).
// Bad repeats and shapes go to the reference, which reports them.
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "kernels/ref/registry.h"

namespace tessera::backends::cpu {

namespace {

void tile_x86(KernelContext& ctx) {
  const auto ref = [&] { run_reference(ctx, ""); };
  const Tensor* x0 = ctx.input(0);
  const Tensor* rp = ctx.input(1);
  if (!x0 || !rp || rp->dtype() != DType::i64 || rp->rank() != 1 || rp->numel() != x0->rank() ||
      x0->rank() < 1 || x0->dtype() == DType::string || x0->dtype() == DType::undefined)
    return ref();
  const int64_t r = x0->rank();
  Shape out(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) {
    const int64_t k = rp->at_int(d);
    if (k < 0 || (k > 0 && x0->dim(d) > (int64_t(1) << 40) / k)) return ref();
    out[size_t(d)] = x0->dim(d) * k;
  }
  const Tensor x = x0->contiguous();
  Tensor& y = ctx.output_for_overwrite(0, x.dtype(), out);
  if (y.numel() == 0) return;
  const size_t es = dtype_size(x.dtype());
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(y.raw_data());
  // Writes the block of axes [d, r) for input offset `in` (elements) at output offset `o` (elements): its
  // first repeat element by element of axis d, then the other repeats as copies of that first one.
  std::vector<int64_t> in_inner(size_t(r) + 1, 1), out_inner(size_t(r) + 1, 1);
  for (int64_t d = r - 1; d >= 0; --d) {
    in_inner[size_t(d)] = in_inner[size_t(d) + 1] * x.dim(d);
    out_inner[size_t(d)] = out_inner[size_t(d) + 1] * out[size_t(d)];
  }
  auto block = [&](auto& self, int64_t d, int64_t in, int64_t o) -> void {
    const int64_t reps = out[size_t(d)] / x.dim(d), n = x.dim(d);
    if (d == r - 1) {
      std::memcpy(dst + size_t(o) * es, src + size_t(in) * es, size_t(n) * es);
    } else {
      for (int64_t i = 0; i < n; ++i)
        self(self, d + 1, in + i * in_inner[size_t(d) + 1], o + i * out_inner[size_t(d) + 1]);
    }
    const int64_t first = n * out_inner[size_t(d) + 1];  // elements of one repeat
    for (int64_t k = 1; k < reps; ++k)
      std::memcpy(dst + size_t(o + k * first) * es, dst + size_t(o) * es, size_t(first) * es);
  };
  if (x.numel() == 0) return;
  block(block, 0, 0, 0);
}

}  // namespace

void register_x86_tile_bindings();
void register_x86_tile_bindings() {
  add_tuned_kernel("", "Tile", {}, tile_x86);
}

}  // namespace tessera::backends::cpu
