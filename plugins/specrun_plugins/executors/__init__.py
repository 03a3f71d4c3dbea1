"""First-party executors: every Executor subclass defined in this package's modules.

Implements register_executors. Add a module here and its types register with no new entry point.
"""

from specrun.plugin import Executor, hookimpl, registrar

register_executors = hookimpl(registrar(__name__, Executor))
