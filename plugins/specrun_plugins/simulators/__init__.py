"""First-party simulators: every Simulator subclass defined in this package's modules.

Implements register_simulators. Add a module here and its types register with no new entry point.
"""

from specrun.plugin import Simulator, hookimpl, registrar

register_simulators = hookimpl(registrar(__name__, Simulator))
