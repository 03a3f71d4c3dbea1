"""First-party assertions: every AssertionType subclass defined in this package's modules.

Implements register_assertion_types. Add a module here and its types register with no new
entry point; modules whose name starts with an underscore are helpers and are skipped.
"""

from specrun.plugin import AssertionType, hookimpl, registrar

register_assertion_types = hookimpl(registrar(__name__, AssertionType))
