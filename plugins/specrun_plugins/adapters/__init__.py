"""First-party framework adapters: every Adapter subclass defined in this package's modules.

Implements register_adapters. Each module adapts one framework (pydantic-ai, LangGraph, the
OpenAI Agents SDK) and imports it only inside its methods: an adapter is asked about an object
only once its framework is imported (``Adapter.modules``), so none is imported for nothing.
"""

from specrun.plugin import Adapter, hookimpl, registrar

register_adapters = hookimpl(registrar(__name__, Adapter))
