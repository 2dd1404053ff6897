"""Import of the official CBraMod release (``pretrained_weights.pth``) as a base checkpoint.

The release is a plain PyTorch state dict, unpickled only with ``torch.load(weights_only=True)``
and loaded one to one into a backbone with CBraMod's own (``acpe``) embedding.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import torch
from torch import Tensor

from passport_kit.checkpoint.base import save_base_checkpoint
from passport_kit.checkpoint.layout import check_name
from passport_kit.checkpoint.tensors import load_strict, sha256_bytes
from passport_kit.errors import CheckpointError
from passport_kit.model import ARCHITECTURES, ModelConfig, build_backbone

#: The channel order of CBraMod's pretraining data (TUEG, cbramod.md §3.1).
CBRAMOD_PRETRAINING_CHANNELS = (
    "FP1 FP2 F3 F4 C3 C4 P3 P4 O1 O2 F7 F8 T3 T4 T5 T6 FZ CZ PZ".split()
)
#: The licence of the official CBraMod weights: its Hugging Face model card (weighting666/CBraMod) says Apache-2.0;
#: the reference code (github.com/wjq-learning/CBraMod) is MIT.
CBRAMOD_LICENCE = "Apache-2.0 (the CBraMod weights' model card, huggingface.co/weighting666/CBraMod)"
_LAYER_KEY = re.compile(r"^encoder\.layers\.(\d+)\.")


def read_foreign_state_dict(path: str | Path) -> dict[str, Tensor]:
    """Return the tensors of a plain PyTorch state-dict file, unpickled safely.

    Only ``torch.load(weights_only=True)`` is used, which refuses arbitrary objects. A
    ``module.`` prefix (left by DataParallel) is removed.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"'{path}' does not exist; give the path of pretrained_weights.pth")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # UnpicklingError, RuntimeError, EOFError, zip errors, ...
        raise CheckpointError(
            f"'{path}' is not a PyTorch weights file that loads safely ({type(exc).__name__});"
            " give the official CBraMod pretrained_weights.pth"
        ) from None
    if not isinstance(obj, Mapping) or not obj or not all(
        isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items()
    ):
        raise CheckpointError(
            f"'{path}' holds a {type(obj).__name__}, not a plain state dict of tensors;"
            " give the official CBraMod pretrained_weights.pth"
        )
    tensors = dict(obj)
    if all(k.startswith("module.") for k in tensors):
        tensors = {k[len("module.") :]: v for k, v in tensors.items()}
    return tensors


def import_cbramod(
    path: str | Path, folder: str | Path, *, name: str, overwrite: bool = False
) -> Path:
    """Return the base checkpoint folder written from the official CBraMod release file.

    The release is a plain state dict of ``CBraMod()`` (211 tensors for 12 layers); with the
    ``acpe`` embedding our backbone has exactly its names and shapes, so the import is a
    strict one-to-one load. Anything else is refused with the list of offending tensors.
    """
    check_name(name)
    path = Path(path)
    tensors = read_foreign_state_dict(path)
    depths = {int(m.group(1)) for k in tensors if (m := _LAYER_KEY.match(k))}
    if not depths:
        raise CheckpointError(
            f"'{path}' has no 'encoder.layers.N.*' tensors, so it is not a CBraMod state dict;"
            " give the official CBraMod pretrained_weights.pth"
        )
    n_layers = max(depths) + 1
    arch = next((a for a, d in ARCHITECTURES.items() if d == n_layers), f"cbramod-{n_layers}-layers")
    backbone = build_backbone(ModelConfig(arch=arch, n_layers=n_layers, embedding="acpe"))
    load_strict(backbone, tensors, what=f"'{path}'")
    training = {
        "source": "CBraMod official release (Wang et al., ICLR 2025; github.com/wjq-learning/CBraMod)",
        "imported_from": path.name,
        "source_sha256": sha256_bytes(path.read_bytes()),
        "pretraining_data": "TUEG (TUH EEG corpus), ~9k hours after 100 uV segment rejection",
        "pretraining_montage": list(CBRAMOD_PRETRAINING_CHANNELS),
        "objective": "masked patch reconstruction (Bernoulli 0.5 mask)",
    }
    card = (
        "Imported from the official CBraMod pretrained weights with"
        " `passport-kit checkpoints import-cbramod`. Channel embedding: ACPE (CBraMod's own);"
        " CBraMod's licence and citation apply to these weights."
    )
    return save_base_checkpoint(
        backbone, folder, name=name, card=card, training_info=training, licence=CBRAMOD_LICENCE, overwrite=overwrite
    )
