"""The targets that speak the model wire: ``litellm`` (a model as the agent) and ``http`` (an agent
behind an OpenAI-compatible or templated endpoint), sharing the model room's wire format and
adaptive limiter. Built-in plugins of the engine, registered through the ``specrun``
entry-point group.

Implements register_targets.
"""

from ... import hookimpl
from ..._core.kinds import Target
from ..._project.plugin_manager import registrar

register_targets = hookimpl(registrar(__name__, Target))
