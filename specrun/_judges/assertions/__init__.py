"""The judges' own assertion types: ``llm`` and ``agent`` (a rubric or a validator agent judges the
output) and ``match`` (Agent Kernel's compare). Built-in plugins of the engine, registered through
the ``specrun`` entry-point group as any plugin is; they use the judging room's internals.

Implements register_assertion_types.
"""

from ... import hookimpl
from ..._core.kinds import AssertionType
from ..._project.plugin_manager import registrar

register_assertion_types = hookimpl(registrar(__name__, AssertionType))
