"""The tool definitions a request offers the model, as the log records them.

They are part of every request, as the floor and the items are, so the inspector lists them with
their cost; each distinct definition is logged once (`tool/define`, addressed by its hash) and
each `step/start` names those its request carried, so replay and a resumed session rebuild them
as they were sent.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from engine.events import ToolDefinition
from engine.gateway.base import ToolSpec
from engine.privacy import PrivacyClass, PrivatizationLabel

DEFINITION_LABEL = PrivatizationLabel.of(PrivacyClass.internal)
"""A definition is the configuration's and the tools' own words: nothing of the workspace."""


def tool_definition(spec: ToolSpec) -> ToolDefinition:
    """`spec` as compact JSON (name, description, argument schema): what its cost counts."""
    text = json.dumps(
        {"name": spec.name, "description": spec.description, "parameters": spec.parameters},
        ensure_ascii=False,
        separators=(",", ":"),
    )
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return ToolDefinition(hash=digest, name=spec.name, text=text, label=DEFINITION_LABEL)


@dataclass(slots=True)
class DefinitionLog:
    """Remembers which definitions were logged, so each distinct one becomes one `tool/define`."""

    _logged: set[str] = field(default_factory=set)

    def note(self, payload: ToolDefinition) -> None:
        """Record a definition already in the log (on resume)."""
        self._logged.add(payload.hash)

    def new(self, definitions: Iterable[ToolDefinition]) -> list[ToolDefinition]:
        """The definitions not logged yet, to append; marks them logged."""
        fresh: list[ToolDefinition] = []
        for definition in definitions:
            if definition.hash not in self._logged:
                self._logged.add(definition.hash)
                fresh.append(definition)
        return fresh
