"""First-party reporters: every Reporter subclass defined in this package's modules.

Implements register_reporters. Add a module here and its types register with no new entry point.
"""

from specrun.plugin import Reporter, hookimpl, registrar

register_reporters = hookimpl(registrar(__name__, Reporter))
