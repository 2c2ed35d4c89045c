"""Optional extras: a one-line error naming the fix when a feature's packages are missing.

``pip install intbench`` is the core (API and scripted models, the offline
problems, evaluation and the report); local models, training and the hub's data
sets are extras (docs/install.md).  A feature that needs one calls
:func:`require` before importing its packages.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable

# The packages of the local extra that loading a model with transformers imports.
LOCAL_MODULES = ("torch", "transformers")
# The train extra's packages that every training run imports (peft only for LoRA).
TRAIN_MODULES = (*LOCAL_MODULES, "accelerate", "trl", "datasets")


class MissingExtra(ImportError):
    """A feature's optional packages are not installed; the message names the fix."""


def install_command(extra: str) -> str:
    """The command that installs ``extra``."""
    return f'pip install "intbench[{extra}]"'


def require(extra: str, modules: str | Iterable[str], feature: str, then: str = "") -> None:
    """Raise :class:`MissingExtra` unless every module of ``modules`` (from ``extra``) can
    be imported; they are looked up, not imported.

    ``feature`` names what needs them (``"the hf: backend"``); ``then`` is a command to
    run after the install, shown with it.
    """
    for module in [modules] if isinstance(modules, str) else modules:
        if not _importable(module):
            fix = install_command(extra) + (f" && {then}" if then else "")
            raise MissingExtra(f"{feature} needs the {extra} extra: {fix}", name=module)


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a half-imported one
        return False
