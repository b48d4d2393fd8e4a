import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))


@pytest.fixture(scope="session")
def model_dir():
    """Where materialized models are cached between test runs (kept out of git)."""
    d = os.environ.get("TESSERA_MODEL_DIR", os.path.join(ROOT, "build", "models"))
    os.makedirs(d, exist_ok=True)
    return d
