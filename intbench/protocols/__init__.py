"""The protocols of IntBench, one module each, and their registry (:mod:`.spec`).

Importing this package registers the built-in protocols: monitor (Int-Bench),
feedback and tutor (KITE).  Another protocol registers its own
:class:`ProtocolSpec` with :func:`register_protocol`.
"""

import importlib

from intbench.protocols.spec import (
    PROTOCOLS,
    ProtocolSpec,
    get_protocol,
    has,
    protocol_of_env_id,
    register_protocol,
    unregister_protocol,
)

# Registration order is the order of gym ids, listings and summary tables.
for _module in ("monitor", "feedback", "tutor"):
    importlib.import_module(f"intbench.protocols.{_module}")
del _module

__all__ = [
    "PROTOCOLS",
    "ProtocolSpec",
    "get_protocol",
    "has",
    "protocol_of_env_id",
    "register_protocol",
    "unregister_protocol",
]
