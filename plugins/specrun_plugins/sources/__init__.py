"""First-party sources: every Source subclass defined in this package's modules.

Implements register_sources. Add a module here and its types register with no new entry point.
"""

from specrun import hookimpl
from specrun.kinds import Source
from specrun.plugins import registrar

register_sources = hookimpl(registrar(__name__, Source))
