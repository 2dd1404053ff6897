"""The bf16 fast path is one room with one door: model/ imports it in one place and runs without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_dependency_directions import PACKAGE, imported_modules

ROOT = PACKAGE.parent
#: A process in which ``passport_kit.model.lowp`` cannot be imported, as if the folder were deleted.
HIDE_LOWP = "import sys; sys.modules['passport_kit.model.lowp'] = None\n"


def _run(code: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", HIDE_LOWP + code], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_model_imports_the_fast_path_only_through_its_door() -> None:
    model = PACKAGE / "model"
    outside = [f for f in sorted(model.rglob("*.py")) if "lowp" not in f.relative_to(model).parts[:1]]
    users = {str(f.relative_to(ROOT)) for f in outside
             if any(m == "passport_kit.model.lowp" or m.startswith("passport_kit.model.lowp.")
                    for m in imported_modules(f, ROOT))}
    assert users == {"passport_kit/model/fast_path.py"}


def test_the_fast_path_imports_nothing_of_the_model_that_uses_it() -> None:
    # no circle: the layer forms read a CrissCrossLayer's weights, never import its module
    users = ("passport_kit.model.transformer", "passport_kit.model.patch_embedding", "passport_kit.model.backbone",
             "passport_kit.model.heads", "passport_kit.model.fast_path")
    found = {f"{f.name}: {m}" for f in (PACKAGE / "model" / "lowp").rglob("*.py")
             for m in imported_modules(f, ROOT) if any(m == u or m.startswith(u + ".") for u in users)}
    assert found == set()


def test_without_the_folder_the_model_runs_bf16_on_its_eager_path() -> None:
    done = _run("""
import torch
from passport_kit.model import Classifier, apply_policy, build_backbone, model_config
from passport_kit.model.fast_path import LOWP
from tests.model.model_helpers import make_meta
assert LOWP is None
model = Classifier(build_backbone(model_config("cbramod-tiny", "mlp-experts")), 3).eval()
x, meta = torch.randn(2, 4, 3, 200), make_meta(4)
with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
    fast = model(x, meta)
assert fast.dtype == torch.float32 and torch.isfinite(fast).all()
apply_policy(model, "adapter")  # the frozen layers' training step: autocast over the graph path
with torch.autocast("cpu", dtype=torch.bfloat16):
    model(x, meta).float().sum().backward()
assert any(q.grad is not None for q in model.parameters() if q.requires_grad)
assert not [m for m, mod in sys.modules.items() if m.startswith("passport_kit.model.lowp") and mod is not None]
""")
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.slow
def test_every_model_test_passes_with_the_folder_hidden() -> None:
    done = _run("import pytest\nsys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', 'tests/model', "
                "'--ignore=tests/model/lowp', '--deselect', 'tests/model/test_fast_path.py']))", timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:]
