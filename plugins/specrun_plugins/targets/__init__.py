"""First-party targets: every Target subclass defined in this package's modules.

Implements register_targets. Add a module here and its types register with no new entry point.
"""

from specrun.plugin import Target, hookimpl, registrar

register_targets = hookimpl(registrar(__name__, Target))
