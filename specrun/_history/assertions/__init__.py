"""The ``snapshot`` assertion: the output against its approved snapshot (the history room's).
A built-in plugin of the engine, registered through the ``specrun`` entry-point group.

Implements register_assertion_types.
"""

from ... import hookimpl
from ..._core.kinds import AssertionType
from ..._project.plugin_manager import registrar

register_assertion_types = hookimpl(registrar(__name__, AssertionType))
