"""Code-generation guards for kernels whose speed hangs on instructions the compiler may drop silently, or add.

GCC 12 once split the direct GEMM kernel's L2-prefetch branch into a `.part` function, judged it free of side
effects (a prefetch has none it can see) and deleted the call: every tile wider than 16 columns lost its
prefetch and the M = 16 GEMMs of BERT and GPT-2 ran 15-25% slower with nothing failing. This compiles the
kernel as the release build does and counts the prefetches in the object code.

The AVX2 micro-kernels once indexed their accumulator array by a run-time row in the epilogue; GCC then kept the
array on the stack and stored all 12 accumulators on every k step (a store per FMA): GEMM and convolution ran at
a third of their speed on CPUs without AVX-512, with every test passing. Their object code must not spill a ymm
register to the stack.
"""
import os
import platform
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLAGS = ["-O3", "-DNDEBUG", "-std=c++20", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx2",
         "-mfma", "-mf16c"]
AVX2_FLAGS = ["-O3", "-DNDEBUG", "-std=c++20", "-mavx2", "-mfma", "-mf16c"]  # CMakeLists' _isa_flags_avx2


def _disassemble(src: str, tmp_path, flags=None) -> dict[str, str]:
    cxx = shutil.which(os.environ.get("CXX", "c++"))
    objdump = shutil.which("objdump")
    if platform.machine() not in ("x86_64", "AMD64") or not cxx or not objdump:
        pytest.skip("needs an x86-64 C++ compiler and objdump")
    obj = tmp_path / "k.o"
    subprocess.run([cxx, *(flags or FLAGS), "-I", os.path.join(ROOT, "src"), "-c", os.path.join(ROOT, src), "-o", str(obj)],
                   check=True)
    text = subprocess.run([objdump, "-d", "--no-show-raw-insn", "-C", str(obj)], check=True, capture_output=True,
                          text=True).stdout
    funcs, name = {}, None
    for line in text.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if m:
            name = m.group(1)
            funcs[name] = ""
        elif name:
            funcs[name] += line + "\n"
    return funcs


def test_direct_gemm_tiles_keep_their_prefetches(tmp_path):
    """Every prefetch mode of every tile shape (direct_tile<MR, NV, PF, L1TOO, PACK>) issues its prefetches in the
    K loop, and the loop touches the stack for nothing: with the mode tested per row and six row offsets in
    registers, GCC reloaded offsets from the stack on every K step (4-8% slower alone). The packing tiles store
    a whole 64-float row of B per K step."""
    funcs = _disassemble("src/kernels/x86/avx512f/f32_gemm_direct__avx512f.cpp", tmp_path)
    tiles = {n: body for n, body in funcs.items() if "direct_tile<" in n and "(" in n and "+0x" not in n}
    # per MR (1..6) and NV (1..4): near, none, far with 1..NV lines, far with 1..NV lines and L1TOO; near packing
    assert len(tiles) == 6 * sum(2 + 2 * nv + 1 for nv in range(1, 5)), sorted(tiles)
    stack = re.compile(r"\(%r[sb]p\)")
    for name, body in tiles.items():
        _, nv, pf, l1too, pack = re.search(r"direct_tile<(\d+), (\d+), (-?\d+), (true|false), (true|false)>",
                                           name).groups()
        loops = _fma_loops(body)  # the K loop, and where GCC unrolls it, its remainder
        assert loops, f"{name}: no FMA loop found"
        for loop in map("\n".join, loops):
            if int(pf) > 0:
                assert "prefetcht1" in loop, f"{name}: the far (L2) prefetch was compiled away"
            if int(pf) < 0 or l1too == "true":
                assert "prefetcht0" in loop, f"{name}: the near (L1) prefetch was compiled away"
            if int(pf) == 0:
                assert "prefetch" not in loop, f"{name}: prefetches where none were asked for"
            if pack == "true":
                stores = len(re.findall(r"vmovups %zmm\d+,(?:-?0x[0-9a-f]+)?\(%r", loop))
                assert stores and stores % 4 == 0, f"{name}: the packing tile does not store whole rows of B"
            assert not stack.search(loop), f"{name}: its K loop reads or writes the stack"


_INSN = re.compile(r"^\s*([0-9a-f]+):\s*(.*)$")
_BRANCH = re.compile(r"^j(?!mp)\w+\s+([0-9a-f]+) <")  # a conditional jump


def _fma_loops(body: str) -> list[list[str]]:
    """The innermost loops of a function (a backward conditional branch and the instructions from its target,
    holding no other such branch) whose body holds an FMA: the K loops (the epilogue's out-of-line blocks jump
    back unconditionally; a register saved around a K loop, in the loop over panels, costs a store per panel,
    not per FMA)."""
    insns = [(int(m.group(1), 16), m.group(2)) for m in map(_INSN.match, body.splitlines()) if m]
    back = []  # (target, branch address) of every backward conditional branch
    for addr, text in insns:
        b = _BRANCH.match(text)
        if b and int(b.group(1), 16) < addr:
            back.append((int(b.group(1), 16), addr))
    loops = []
    for start, end in back:
        if any(start <= s and e < end and (s, e) != (start, end) for s, e in back):
            continue  # holds an inner loop
        loop = [t for a, t in insns if start <= a <= end]
        if any(t.startswith("vfmadd") for t in loop):
            loops.append(loop)
    return loops


def _assert_k_loops_keep_registers(funcs: dict[str, str], kernel: str, count: int, reg: str) -> None:
    """The functions whose name holds `kernel` (count of them) store no `reg` vector register to the stack
    inside a K loop."""
    spill = re.compile(r"vmov[au]ps\s+%" + reg + r"\d+,-?0x[0-9a-f]+\(%r[sb]p\)")
    kernels = {n: body for n, body in funcs.items() if kernel in n and "(" in n and "+0x" not in n}
    assert len(kernels) == count, sorted(kernels)
    for name, body in kernels.items():
        loops = _fma_loops(body)
        assert loops, f"{name}: no FMA loop found"
        for loop in loops:
            spills = [t for t in loop if spill.match(t)]
            assert not spills, f"{name}: its K loop stores {len(spills)} {reg} registers to the stack, e.g. {spills[0]}"


@pytest.mark.parametrize("src,kernel,count", [
    ("src/kernels/x86/avx2/f32_gemm_ukr_6x16__avx2.cpp", "f32_gemm_ukr_6x16__avx2(", 1),
    ("src/kernels/x86/avx2/f32_gemm_direct__avx2.cpp", "direct_tile<", 24),  # MR 1..6 x 1..2 vectors x full/edge
    ("src/kernels/x86/avx2/f32_gemm_direct__avx2.cpp", "row_tiles<", 24),  # beta x bias x residual x activation
    ("src/kernels/x86/avx2/f32_conv_nhwc__avx2.cpp", "conv_ukr<", 18),  # 6x16 and 12x8, their remainder rows
    # 5 activations x bias x residual x form x prefetch
    ("src/kernels/x86/avx2/f32_conv_nhwc__avx2.cpp", "conv_tiles::run<", 80),
])
def test_avx2_kernels_keep_their_accumulators_in_registers(tmp_path, src, kernel, count):
    funcs = _disassemble(src, tmp_path, AVX2_FLAGS)
    _assert_k_loops_keep_registers(funcs, kernel, count, "ymm")
    if kernel == "conv_tiles::run<":
        _assert_tiles_prefetch_as_asked(funcs)


def _assert_tiles_prefetch_as_asked(funcs: dict[str, str]) -> None:
    """The whole-tile conv kernels (conv_tiles::run<V, MR, NV, ACT, BIAS, RES, TABLE, PF>) with PF issue an L2
    prefetch in every K loop (a Winograd conv's next weight block), those without issue none."""
    tiles = {n: body for n, body in funcs.items() if "conv_tiles::run<" in n and "(" in n and "+0x" not in n}
    assert tiles
    for name, body in tiles.items():
        pf = re.search(r"conv_tiles::run<.*, (true|false)>\(", name).group(1) == "true"
        for loop in map("\n".join, _fma_loops(body)):
            if pf:
                assert "prefetcht1" in loop, f"{name}: the weight prefetch was compiled away"
            else:
                assert "prefetch" not in loop, f"{name}: prefetches where none were asked for"


def test_avx512_conv_tiles_keep_their_accumulators_in_registers(tmp_path):
    """The whole-tile conv kernels hold 24 zmm accumulators (6 x 64, 12 x 32) or 12 (12 x 16), their B vectors
    and a broadcast: at most 29 of 32."""
    funcs = _disassemble("src/kernels/x86/avx512f/f32_conv_nhwc__avx512f.cpp", tmp_path)
    # 3 tile shapes x 5 activations x bias x residual x form x prefetch
    _assert_k_loops_keep_registers(funcs, "conv_tiles::run<", 240, "zmm")
    _assert_tiles_prefetch_as_asked(funcs)
    _assert_k_loops_keep_registers(funcs, "tiles_zy<", 40, "zmm")  # 12 x 24: zmm + ymm accumulators
    _assert_k_loops_keep_registers(funcs, "tiles_zy<", 40, "ymm")
