"""First-party sources: every Source subclass defined in this package's modules.

Implements register_sources. Add a module here and its types register with no new entry point.
"""

from specrun.plugin import Source, hookimpl, registrar

register_sources = hookimpl(registrar(__name__, Source))
