"""Where the torch models run: RAGLOUPE_DEVICE = auto | cpu | cuda | mps.

``auto`` takes a GPU when torch sees one (CUDA, then Apple's MPS) and the
CPU otherwise, so the same settings work on a laptop and on a GPU machine.
A device named explicitly that torch cannot use is a named error saying so,
never a silent fallback: whoever wrote ``cuda`` expects the GPU. The pinned
torch is a CPU build, so on it ``auto`` is the CPU and ``cuda`` says why not.
Used by the bundled embedding model and the cross-encoder; the ONNX backend
runs on onnxruntime's CPU kernels whatever the setting says.
"""

from __future__ import annotations

from ragloupe.errors import DeviceUnavailable

DEVICES = ("auto", "cpu", "cuda", "mps")


def available_devices() -> list[str]:
    """The devices this torch can run on, best first; "cpu" always last."""
    import torch

    found = []
    if torch.cuda.is_available():
        found.append("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append("mps")
    return found + ["cpu"]


def resolve_device(wanted: str) -> str:
    """The torch device to load a model on for the RAGLOUPE_DEVICE value ``wanted``."""
    wanted = (wanted or "auto").strip().lower()
    if wanted not in DEVICES:
        raise DeviceUnavailable(f"RAGLOUPE_DEVICE={wanted!r}: wants one of {', '.join(DEVICES)}")
    usable = available_devices()
    if wanted == "auto":
        return usable[0]
    if wanted not in usable:
        import torch

        build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
        raise DeviceUnavailable(f"RAGLOUPE_DEVICE={wanted}, but torch {torch.__version__} ({build}) "
                                f"cannot use {wanted} here; set RAGLOUPE_DEVICE=auto or cpu")
    return wanted
