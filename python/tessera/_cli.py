"""Console entry point: runs the `tessera` binary installed in the package."""

from __future__ import annotations

import os
import sys


def binary_path() -> str:
    """Path of the bundled `tessera` executable."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "tessera")


def main() -> int:
    exe = binary_path()
    if not os.path.exists(exe):
        sys.stderr.write(f"tessera: error: the tessera binary is missing ({exe}); reinstall the package\n")
        return 1
    argv = [exe] + sys.argv[1:]
    # `tessera bench --compare onnxruntime` runs `python -m tessera.bench`: use this interpreter.
    os.environ.setdefault("TESSERA_PYTHON", sys.executable)
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        os.execv(exe, argv)  # does not return
    import subprocess  # pragma: no cover - non-posix
    return subprocess.call(argv)


if __name__ == "__main__":
    sys.exit(main())
