"""The Python test API: drive an agent from pytest and compare its answers (Agent Kernel's ``Test``).

:class:`Test` is in :mod:`specrun.testing.api`; its settings (``test-config.yaml``, the
environment, evaluators) are in :mod:`specrun.testing.config`.
"""

from .._judges.matching import Mode
from .api import Test
from .config import Evaluator, TestConfig, load_config
from .similarity import aassert_similar, assert_similar

__all__ = ["Evaluator", "Mode", "Test", "TestConfig", "aassert_similar", "assert_similar", "load_config"]
