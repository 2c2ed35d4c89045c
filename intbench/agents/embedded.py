"""Old home of :mod:`intbench.agents.backends.embedded`, kept for existing imports.

The name is bound to the same module object, so patching an attribute here
patches the real one.
"""

import sys

from intbench.agents.backends import embedded

sys.modules[__name__] = embedded
