"""One typed registry per kind of plugin, remembering which plugin added each type."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._core.errors import PluginError, UsageError
from .._core.kinds import Adapter, AssertionType, Executor, Plugin, Reporter, Simulator, Source, Target

KINDS: dict[str, type[Plugin]] = {
    "assertion": AssertionType,
    "target": Target,
    "source": Source,
    "simulator": Simulator,
    "reporter": Reporter,
    "executor": Executor,
    "adapter": Adapter,
}


@dataclass(frozen=True)
class Entry:
    """A registered type and its provenance."""

    cls: Any
    plugin: str
    distribution: str | None = None


@dataclass
class Registry:
    """The installed types of each kind, by name."""

    types: dict[str, dict[str, Entry]] = field(default_factory=lambda: {k: {} for k in KINDS})

    def register(self, kind: str, cls: Any, plugin: str, distribution: str | None = None) -> None:
        base = KINDS[kind]
        if not (isinstance(cls, type) and issubclass(cls, base)):
            raise PluginError(
                f"plugin {plugin!r} registered {cls!r} as a {kind}, which is not a {base.__name__} subclass"
            )
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not name:
            raise PluginError(f"plugin {plugin!r}: {kind} class {cls.__name__} has no name")
        table = self.types[kind]
        if name in table and table[name].cls is not cls:
            other = table[name]
            raise PluginError(
                f"{kind} type {name!r} is registered twice: by plugin {other.plugin!r}"
                f"{_dist(other.distribution)} and by plugin {plugin!r}{_dist(distribution)}"
            )
        table[name] = Entry(cls, plugin, distribution)

    def get(self, kind: str, name: str) -> Any:
        """The class registered as ``name``; a usage error listing the known names otherwise."""
        try:
            return self.types[kind][name].cls
        except KeyError:
            raise UsageError(f"unknown {kind} type {name!r} (known: {', '.join(self.names(kind))})") from None

    def names(self, kind: str) -> list[str]:
        return sorted(self.types[kind])

    def classes(self, kind: str) -> dict[str, Any]:
        return {name: entry.cls for name, entry in sorted(self.types[kind].items())}

    def declaring(self, kind: str, declaration: str) -> Any:
        """The one class of ``kind`` that sets ``declaration`` (e.g. the assertion type with an
        ``expected_param``), or None; a ``PluginError`` when several plugins claim it."""
        found = [e for e in self.types[kind].values() if getattr(e.cls, declaration)]
        if len(found) > 1:
            who = ", ".join(f"{e.cls.name!r} (plugin {e.plugin!r})" for e in found)
            raise PluginError(f"several {kind} types declare {declaration}: {who}")
        return found[0].cls if found else None

    def simulator_for(self, config: Mapping[str, Any]) -> Any:
        """The simulator class a case's ``simulator`` config names: its ``type``, else the
        simulator whose ``shorthand`` parameter it gives (``{use: id}``)."""
        if "type" in config:
            return self.get("simulator", config["type"])
        implied = self.declaring("simulator", "shorthand")
        if implied is None:
            raise UsageError(f"a simulator needs a 'type' (known: {', '.join(self.names('simulator'))})")
        return implied

    def simulator_config(self, default: str) -> dict[str, Any]:
        """The simulator config ``--simulator ID`` means: ``{type: <implied>, <shorthand>: ID}``."""
        implied = self.declaring("simulator", "shorthand")
        if implied is None:
            raise UsageError("--simulator needs a simulator that takes an agent id; none is installed")
        return {"type": implied.name, implied.shorthand: default}

    def named_reporter(self, spec: str) -> Any:
        """The reporter ``-r report.NAME`` names by its name or an alias (V1's built-in reporter
        agents: ``report.html``, ``report.markdown``, ``report.json``, ``report.summary``; any
        installed reporter), or None: then ``spec`` is a project agent (``agents:ID`` always is)."""
        prefix, _, name = spec.partition(".")
        if prefix != "report":
            return None
        found = [e.cls for e in self.types["reporter"].values() if name == e.cls.name or name in e.cls.aliases]
        return next((cls for cls in found if not cls.by_agent), None)

    def reporter_for(self, path: str) -> Any:
        """The reporter class whose extension ends ``path`` (longest extension wins)."""
        best: tuple[int, Any] | None = None
        for entry in self.types["reporter"].values():
            for ext in entry.cls.extensions:
                if path.lower().endswith(ext) and (best is None or len(ext) > best[0]):
                    best = (len(ext), entry.cls)
        if best is None:
            known = sorted(e for entry in self.types["reporter"].values() for e in entry.cls.extensions)
            raise UsageError(f"no reporter writes {path!r} (known extensions: {', '.join(known)})")
        return best[1]


def _dist(distribution: str | None) -> str:
    return f" (distribution {distribution})" if distribution else ""
