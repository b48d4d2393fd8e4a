"""Code-generation guards for kernels whose speed hangs on instructions the compiler may drop silently.

GCC 12 once split the direct GEMM kernel's L2-prefetch branch into a `.part` function, judged it free of side
effects (a prefetch has none it can see) and deleted the call: every tile wider than 16 columns lost its
prefetch and the M = 16 GEMMs of BERT and GPT-2 ran 15-25% slower with nothing failing. This compiles the
kernel as the release build does and counts the prefetches in the object code.
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


def _disassemble(src: str, tmp_path) -> dict[str, str]:
    cxx = shutil.which(os.environ.get("CXX", "c++"))
    objdump = shutil.which("objdump")
    if platform.machine() not in ("x86_64", "AMD64") or not cxx or not objdump:
        pytest.skip("needs an x86-64 C++ compiler and objdump")
    obj = tmp_path / "k.o"
    subprocess.run([cxx, *FLAGS, "-I", os.path.join(ROOT, "src"), "-c", os.path.join(ROOT, src), "-o", str(obj)],
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


def test_direct_gemm_tiles_keep_their_l2_prefetch(tmp_path):
    funcs = _disassemble("src/kernels/x86/avx512f/f32_gemm_direct__avx512f.cpp", tmp_path)
    tiles = {n: body for n, body in funcs.items() if "direct_tile<" in n and "(" in n}
    assert len(tiles) == 24, sorted(tiles)  # MR 1..6 x 1..4 vectors
    for name, body in tiles.items():
        assert "prefetcht1" in body, f"{name}: the far (L2) prefetch of the next B panel was compiled away"
        assert "prefetcht0" in body, f"{name}: the near (L1) prefetch along the panel was compiled away"
