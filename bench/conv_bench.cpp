// f32 NHWC convolution: Tessera vs oneDNN on the conv shapes of MobileNetV2 and ResNet-50, at 1 and 2
// threads, in one process so that both see the same machine state.
//   build/release/bench/conv_bench --benchmark_format=json --benchmark_repetitions=5 > conv.json
//   python3 bench/conv_table.py conv.json
// Every conv carries a bias and a Clip(0, 6) epilogue (ReLU6: MobileNet's), fused in both libraries.
// oneDNN gets the layouts it prefers (format_tag::any for source, weights and destination: its blocked
// nChw16c kernels), reordered outside the timed loop; Tessera runs NHWC as the runtime does, with
// weights packed once. "pw+dw" rows time a 1x1 expansion feeding a 3x3 depthwise conv: Tessera's fused
// kernel (conv2d_pw_dw_nhwc_f32) against oneDNN's two primitives back to back.
// Counters: GFLOPS, pct_peak (of the FMA peak measured at start, bench_common.h).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdlib>
#include <dnnl.hpp>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/bench_common.h"
#include "core/thread_pool.h"
#include "kernels/x86/conv_nhwc.h"

namespace {

using tessera::bench::peak_gflops;
using tessera::bench::settle;

namespace x86 = tessera::kernels::x86;

struct ConvShape {
  const char* name;
  int64_t h, w, c, oc, k, stride, groups;  // square kernel, "same" padding (k / 2)
  int wino = 0;  // Tessera runs it as Winograd F(m x m, 3x3), m = 2 or 4 (as the runtime does)
  int64_t dilation = 1;
};

// A pw+dw pair: 1x1 c -> e, then 3x3 depthwise over e with the given stride.
struct PairShape {
  const char* name;
  int64_t h, w, c, e, stride;
};

const ConvShape kConvs[] = {
    {"mbv2 stem 224x224 3->32 3x3 s2", 224, 224, 3, 32, 3, 2, 1},
    {"mbv2 dw 112x112x32 s1", 112, 112, 32, 32, 3, 1, 32},
    {"mbv2 pw 112x112 32->16", 112, 112, 32, 16, 1, 1, 1},
    {"mbv2 pw 112x112 16->96", 112, 112, 16, 96, 1, 1, 1},
    {"mbv2 dw 112x112x96 s2", 112, 112, 96, 96, 3, 2, 96},
    {"mbv2 pw 56x56 96->24", 56, 56, 96, 24, 1, 1, 1},
    {"mbv2 pw 56x56 24->144", 56, 56, 24, 144, 1, 1, 1},
    {"mbv2 dw 56x56x144 s1", 56, 56, 144, 144, 3, 1, 144},
    {"mbv2 pw 56x56 144->24", 56, 56, 144, 24, 1, 1, 1},
    {"mbv2 pw 28x28 32->192", 28, 28, 32, 192, 1, 1, 1},
    {"mbv2 pw 28x28 192->32", 28, 28, 192, 32, 1, 1, 1},
    {"mbv2 pw 14x14 64->384", 14, 14, 64, 384, 1, 1, 1},
    {"mbv2 pw 14x14 384->64", 14, 14, 384, 64, 1, 1, 1},
    {"mbv2 pw 14x14 96->576", 14, 14, 96, 576, 1, 1, 1},
    {"mbv2 pw 14x14 576->96", 14, 14, 576, 96, 1, 1, 1},
    {"mbv2 pw 7x7 160->960", 7, 7, 160, 960, 1, 1, 1},
    {"mbv2 dw 7x7x960 s1", 7, 7, 960, 960, 3, 1, 960},
    {"mbv2 pw 7x7 960->160", 7, 7, 960, 160, 1, 1, 1},
    {"mbv2 pw 7x7 320->1280", 7, 7, 320, 1280, 1, 1, 1},
    {"r50 stem 224x224 3->64 7x7 s2", 224, 224, 3, 64, 7, 2, 1},
    {"r50 pw 56x56 256->64", 56, 56, 256, 64, 1, 1, 1},
    {"r50 pw 56x56 64->256", 56, 56, 64, 256, 1, 1, 1},
    {"r50 3x3 56x56 64->64", 56, 56, 64, 64, 3, 1, 1},
    {"r50 3x3 56x56 64->64 wino4", 56, 56, 64, 64, 3, 1, 1, 4},
    {"r50 3x3 28x28 128->128 wino4", 28, 28, 128, 128, 3, 1, 1, 4},
    {"r50 3x3 14x14 256->256", 14, 14, 256, 256, 3, 1, 1},
    {"r50 3x3 14x14 256->256 wino2", 14, 14, 256, 256, 3, 1, 1, 2},
    {"r50 pw 14x14 1024->256", 14, 14, 1024, 256, 1, 1, 1},
    {"r50 3x3 7x7 512->512 s1", 7, 7, 512, 512, 3, 1, 1},
    {"regnety 3x3 s2 112x112x64 g4", 112, 112, 64, 64, 3, 2, 4},
    {"regnety 3x3 s2 56x56x144 g9", 56, 56, 144, 144, 3, 2, 9},
    {"regnety 3x3 s2 28x28x320 g20", 28, 28, 320, 320, 3, 2, 20},
    {"regnety 3x3 s2 14x14x784 g49", 14, 14, 784, 784, 3, 2, 49},
    {"regnety 3x3 28x28x144 g9", 28, 28, 144, 144, 3, 1, 9},
    {"regnety 3x3 28x28x144 g9 wino4", 28, 28, 144, 144, 3, 1, 9, 4},
    {"regnety 3x3 14x14x320 g20", 14, 14, 320, 320, 3, 1, 20},
    {"regnety 3x3 14x14x320 g20 wino2", 14, 14, 320, 320, 3, 1, 20, 2},
    {"regnety 3x3 14x14x320 g20 wino4", 14, 14, 320, 320, 3, 1, 20, 4},
    {"regnety 3x3 7x7x784 g49", 7, 7, 784, 784, 3, 1, 49},
    {"regnety 3x3 7x7x784 g49 wino2", 7, 7, 784, 784, 3, 1, 49, 2},
    {"regnety 3x3 7x7x784 g49 wino4", 7, 7, 784, 784, 3, 1, 49, 4},
    {"deeplab 3x3 28x28x256 d2", 28, 28, 256, 256, 3, 1, 1, 0, 2},
    {"deeplab 3x3 28x28x256 d2 wino4", 28, 28, 256, 256, 3, 1, 1, 4, 2},
    {"deeplab 3x3 28x28x256 d2 wino2", 28, 28, 256, 256, 3, 1, 1, 2, 2},
    {"deeplab 3x3 28x28x512 d4", 28, 28, 512, 512, 3, 1, 1, 0, 4},
    {"deeplab 3x3 28x28x512 d4 wino4", 28, 28, 512, 512, 3, 1, 1, 4, 4},
    {"deeplab 3x3 28x28x512 d4 wino2", 28, 28, 512, 512, 3, 1, 1, 2, 4},
    {"resnext 3x3 28x28x256 g32", 28, 28, 256, 256, 3, 1, 32},
    {"resnext 3x3 14x14x512 g32", 14, 14, 512, 512, 3, 1, 32},
    {"resnext 3x3 14x14x512 g32 wino2", 14, 14, 512, 512, 3, 1, 32, 2},
    {"resnext 3x3 14x14x512 g32 wino4", 14, 14, 512, 512, 3, 1, 32, 4},
    {"resnext 3x3 7x7x1024 g32", 7, 7, 1024, 1024, 3, 1, 32},
    {"resnext 3x3 7x7x1024 g32 wino2", 7, 7, 1024, 1024, 3, 1, 32, 2},
    {"resnext 3x3 7x7x1024 g32 wino4", 7, 7, 1024, 1024, 3, 1, 32, 4},
    {"yolov8n stem 640x640 3->16 3x3 s2", 640, 640, 3, 16, 3, 2, 1},
    {"shufflenet stem 224x224 3->24 3x3 s2", 224, 224, 3, 24, 3, 2, 1},
    {"stem 224x224 3->48 3x3 s2", 224, 224, 3, 48, 3, 2, 1},
    {"stem 224x224 3->64 3x3 s2", 224, 224, 3, 64, 3, 2, 1},
};

const PairShape kPairs[] = {
    {"mbv2 pw+dw 112x112 16->96 s2", 112, 112, 16, 96, 2},
    {"mbv2 pw+dw 56x56 24->144 s1", 56, 56, 24, 144, 1},
    {"mbv2 pw+dw 56x56 24->144 s2", 56, 56, 24, 144, 2},
    {"mbv2 pw+dw 28x28 32->192 s1", 28, 28, 32, 192, 1},
    {"mbv2 pw+dw 14x14 96->576 s1", 14, 14, 96, 576, 1},
    {"mbv2 pw+dw 7x7 160->960 s1", 7, 7, 160, 960, 1},
};

// 64-byte-aligned storage, as the runtime's tensors and packed weights are (oneDNN aligns its own).
template <class T>
struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <class U>
  Aligned64(const Aligned64<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64)); }
  void deallocate(T* p, size_t) { std::free(p); }
  bool operator==(const Aligned64&) const { return true; }
};
using Floats = std::vector<float, Aligned64<float>>;

Floats random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  Floats v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

x86::Conv2dParams params(const ConvShape& s) {
  x86::Conv2dParams p;
  p.c = s.c, p.h = s.h, p.w = s.w, p.oc = s.oc, p.kh = p.kw = s.k, p.sh = p.sw = s.stride;
  p.pad_t = p.pad_l = p.pad_b = p.pad_r = s.k / 2 * s.dilation;
  p.dh = p.dw = s.dilation;
  p.groups = s.groups;
  return p;
}

double conv_flops(const x86::Conv2dParams& p) {
  return 2.0 * double(p.oh() * p.ow()) * double(p.oc) * double(p.kh * p.kw) * double(p.c / p.groups);
}

void report(benchmark::State& st, double flops, int threads) {
  st.counters["GFLOPS"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["pct_peak"] = benchmark::Counter(flops * 1e-9 * 100.0 / peak_gflops(threads),
                                               benchmark::Counter::kIsIterationInvariantRate);
}

x86::ConvEpilogue relu6(const float* bias) {
  x86::ConvEpilogue ep;
  ep.bias = bias, ep.act = tessera::kernels::x86::Activation::clip, ep.clip_min = 0, ep.clip_max = 6;
  return ep;
}

// Packs ONNX-layout weights [oc, c/groups, k, k] the way the layout_nhwc pass does.
Floats pack(const x86::Conv2dParams& p, const Floats& w, int wino) {
  if (p.is_depthwise()) {
    Floats out(size_t(p.c * p.kh * p.kw));
    x86::dw_nhwc_pack_weights(w.data(), p.c, p.kh, p.kw, out.data());
    return out;
  }
  if (wino) {
    Floats out(x86::wino_packed_floats(p.oc, p.c / p.groups, wino, p.groups));
    x86::wino_pack_weights(w.data(), p.oc, p.c / p.groups, wino, out.data(), p.groups);
    return out;
  }
  if (p.groups > 1) {
    Floats out(x86::grouped_nhwc_packed_floats(p));
    x86::grouped_nhwc_pack_weights(w.data(), p, out.data());
    return out;
  }
  Floats out(x86::conv_nhwc_packed_floats(p.oc, p.c * p.kh * p.kw));
  x86::conv_nhwc_pack_weights(w.data(), p.oc, p.c, p.kh, p.kw, out.data());
  return out;
}

// Tessera's conv on kConvs[shape] at `threads`: the NHWC kernels (Winograd where the shape names it), or with
// nchw_in the stem kernel reading its image in NCHW (conv2d_nchw_in_f32, how the models run a stem; only
// for the shapes it takes).
void time_tessera(benchmark::State& st, bool nchw_in) {
  const ConvShape& s = kConvs[st.range(0)];
  const int threads = int(st.range(1));
  const x86::Conv2dParams p = params(s);
  const auto x = random_floats(size_t(p.h * p.w * p.c), 1);
  const auto w = random_floats(size_t(p.oc * (p.c / p.groups) * p.kh * p.kw), 2);
  const auto b = random_floats(size_t(p.oc), 3);
  const auto wp = pack(p, w, s.wino);
  Floats y(size_t(p.oh() * p.ow() * p.oc));
  tessera::ThreadPool pool(threads);
  const x86::ConvEpilogue ep = relu6(b.data());
  settle();
  for (auto _ : st) {
    if (nchw_in)
      x86::conv2d_nchw_in_f32(p, x.data(), wp.data(), ep, y.data(), &pool, x86::conv_isa());
    else if (s.wino)
      x86::conv2d_wino_nhwc_f32(p, s.wino, x.data(), wp.data(), ep, y.data(), &pool);
    else
      x86::conv2d_nhwc_f32(p, x.data(), wp.data(), ep, y.data(), &pool);
  }
  report(st, conv_flops(p), threads);
}

void BM_tessera(benchmark::State& st) {
  time_tessera(st, false);
}
void BM_tessera_nchw_in(benchmark::State& st) {
  time_tessera(st, true);
}

// One oneDNN convolution primitive with its memories, all in oneDNN's preferred layouts.
struct DnnlConv {
  dnnl::convolution_forward prim;
  std::unordered_map<int, dnnl::memory> args;
  dnnl::memory dst;

  DnnlConv(dnnl::engine& eng, dnnl::stream& strm, const x86::Conv2dParams& p, const dnnl::memory* src_in) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const dnnl::memory::dims src_dims{1, p.c, p.h, p.w}, dst_dims{1, p.oc, p.oh(), p.ow()};
    const dnnl::memory::dims w_dims =
        p.groups > 1 ? dnnl::memory::dims{p.groups, p.oc / p.groups, p.c / p.groups, p.kh, p.kw}
                     : dnnl::memory::dims{p.oc, p.c, p.kh, p.kw};
    const dnnl::memory::desc src_any(src_dims, dt::f32, tag::any), dst_any(dst_dims, dt::f32, tag::any),
        w_any(w_dims, dt::f32, tag::any), b_md({p.oc}, dt::f32, tag::x);
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                      src_any, w_any, b_md, dst_any, {p.sh, p.sw}, {p.dh - 1, p.dw - 1},
                                      {p.pad_t, p.pad_l}, {p.pad_b, p.pad_r});
    dnnl::post_ops po;
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.0f, 6.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    dnnl::convolution_forward::primitive_desc pd(d, attr, eng);
    prim = dnnl::convolution_forward(pd);
    auto fill = [&](const dnnl::memory::desc& user, const dnnl::memory::desc& want, unsigned seed) {
      const auto v = random_floats(user.get_size() / sizeof(float), seed);
      dnnl::memory u(user, eng), m(want, eng);
      std::copy(v.begin(), v.end(), static_cast<float*>(u.get_data_handle()));
      dnnl::reorder(u, m).execute(strm, u, m);
      return m;
    };
    dnnl::memory src = src_in && src_in->get_desc() == pd.src_desc()
                           ? *src_in
                           : fill(dnnl::memory::desc(src_dims, dt::f32, tag::nhwc), pd.src_desc(), 1);
    const dnnl::memory w = fill(dnnl::memory::desc(w_dims, dt::f32, p.groups > 1 ? tag::goihw : tag::oihw),
                                pd.weights_desc(), 2);
    const dnnl::memory bias = fill(b_md, b_md, 3);
    dst = dnnl::memory(pd.dst_desc(), eng);
    strm.wait();
    args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, dst}};
  }
  void run(dnnl::stream& strm) { prim.execute(strm, args); }
};

void BM_onednn(benchmark::State& st) {
  const ConvShape& s = kConvs[st.range(0)];
  const int threads = int(st.range(1));
  omp_set_num_threads(threads);  // Debian's oneDNN uses OpenMP
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const x86::Conv2dParams p = params(s);
  DnnlConv conv(eng, strm, p, nullptr);
  settle();
  for (auto _ : st) {
    conv.run(strm);
    strm.wait();
  }
  report(st, conv_flops(p), threads);
}

struct Pair {
  x86::Conv2dParams pw, dw;
  explicit Pair(const PairShape& s) {
    pw.c = s.c, pw.h = s.h, pw.w = s.w, pw.oc = s.e;
    dw.c = dw.oc = dw.groups = s.e, dw.h = s.h, dw.w = s.w, dw.kh = dw.kw = 3, dw.sh = dw.sw = s.stride;
    dw.pad_t = dw.pad_l = dw.pad_b = dw.pad_r = 1;
  }
  double flops() const { return conv_flops(pw) + conv_flops(dw); }
};

void BM_tessera_pair(benchmark::State& st) {
  const Pair q(kPairs[st.range(0)]);
  const int threads = int(st.range(1));
  const auto x = random_floats(size_t(q.pw.h * q.pw.w * q.pw.c), 1);
  const auto w1 = pack(q.pw, random_floats(size_t(q.pw.oc * q.pw.c), 2), false);
  const auto w2 = pack(q.dw, random_floats(size_t(q.dw.c * 9), 4), false);
  const auto b1 = random_floats(size_t(q.pw.oc), 3), b2 = random_floats(size_t(q.dw.oc), 5);
  Floats y(size_t(q.dw.oh() * q.dw.ow() * q.dw.oc));
  tessera::ThreadPool pool(threads);
  const x86::ConvEpilogue ep1 = relu6(b1.data()), ep2 = relu6(b2.data());
  settle();
  for (auto _ : st)
    x86::conv2d_pw_dw_nhwc_f32(q.pw, x.data(), w1.data(), ep1, q.dw, w2.data(), ep2, y.data(), &pool);
  report(st, q.flops(), threads);
}

void BM_onednn_pair(benchmark::State& st) {
  const Pair q(kPairs[st.range(0)]);
  const int threads = int(st.range(1));
  omp_set_num_threads(threads);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  DnnlConv pw(eng, strm, q.pw, nullptr);
  DnnlConv dw(eng, strm, q.dw, &pw.dst);  // reads pw's output where the layouts agree (they do: nChw16c)
  settle();
  for (auto _ : st) {
    pw.run(strm);
    dw.run(strm);
    strm.wait();
  }
  report(st, q.flops(), threads);
}

}  // namespace

// Registered shape by shape, library after library, so that both see the same machine state.
int main(int argc, char** argv) {
  using Fn = void (*)(benchmark::State&);
  const std::pair<const char*, Fn> kConvLibs[] = {{"BM_tessera", BM_tessera}, {"BM_onednn", BM_onednn}};
  const std::pair<const char*, Fn> kPairLibs[] = {{"BM_tessera_pair", BM_tessera_pair},
                                                  {"BM_onednn_pair", BM_onednn_pair}};
  auto add = [](const char* lib, const char* shape, Fn fn, int i, int t) {
    benchmark::RegisterBenchmark((std::string(lib) + "/" + shape).c_str(), fn)
        ->Args({i, t})
        ->ArgNames({"shape", "threads"})
        ->UseRealTime()
        ->MinTime(0.1);
  };
  for (int t : {1, 2}) {
    for (int i = 0; i < int(std::size(kConvs)); ++i) {
      for (const auto& [name, fn] : kConvLibs) add(name, kConvs[i].name, fn, i, t);
      if (kConvs[i].wino == 0 && x86::conv_nchw_in_applies(params(kConvs[i]), x86::conv_isa()))
        add("BM_tessera_nchw_in", kConvs[i].name, BM_tessera_nchw_in, i, t);
    }
    for (int i = 0; i < int(std::size(kPairs)); ++i)
      for (const auto& [name, fn] : kPairLibs) add(name, kPairs[i].name, fn, i, t);
  }
  return tessera::bench::run_benchmarks(argc, argv);
}
