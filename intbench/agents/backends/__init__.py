"""Model backends: the spec strings that name them, loading, and the shared base.

``load_backend(spec)`` builds a backend from a spec (syntax in
:mod:`intbench.agents.backends.loading`); ``shared_backend(spec)`` loads each
spec once per process.  The backend classes are imported on first use, so
``from intbench.agents.backends import ScriptedBackend`` does not pull in
torch or openai.
"""

from __future__ import annotations

from intbench.agents.backends.base import (
    BackendError,
    BaseBackend,
    cut_at_stop,
    validate_batch,
    validate_params,
)
from intbench.agents.backends.loading import (
    backend_name,
    load_backend,
    parse_spec,
    shared_backend,
)
from intbench.lazy import lazy_attributes

__getattr__ = lazy_attributes(
    __name__,
    {
        "HFBackend": "intbench.agents.backends.hf",
        "OpenAIBackend": "intbench.agents.backends.openai_compat",
        "LlamaCppBackend": "intbench.agents.backends.llamacpp",
        "ScriptedBackend": "intbench.agents.backends.scripted",
    },
)

__all__ = [
    "BackendError",
    "BaseBackend",
    "HFBackend",
    "LlamaCppBackend",
    "OpenAIBackend",
    "ScriptedBackend",
    "backend_name",
    "cut_at_stop",
    "load_backend",
    "parse_spec",
    "shared_backend",
    "validate_batch",
    "validate_params",
]
