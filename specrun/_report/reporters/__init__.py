"""The report formats: JSON, Markdown, HTML, JUnit, the brief console table and the agent
reporter, each reading the run's result stream back through the report room's one reader.
Built-in plugins of the engine, registered through the ``specrun`` entry-point group.

Implements register_reporters; modules whose name starts with an underscore are helpers.
"""

from ... import hookimpl
from ..._core.kinds import Reporter
from ..._project.plugin_manager import registrar

register_reporters = hookimpl(registrar(__name__, Reporter))
