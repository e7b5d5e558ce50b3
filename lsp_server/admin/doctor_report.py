"""What `agent-assist doctor` found: its findings and the report its checks fill in."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Level = Literal["ok", "info", "warning", "problem"]


@dataclass
class Finding:
    """One line of the doctor's report."""

    level: Level
    area: str
    message: str


@dataclass
class DoctorReport:
    """Everything `doctor` found, for the table and for `--json`."""

    findings: list[Finding] = field(default_factory=list)
    root: dict[str, Any] = field(default_factory=dict)
    projects: list[dict[str, Any]] = field(default_factory=list)
    model: dict[str, Any] = field(default_factory=dict)
    store: dict[str, Any] = field(default_factory=lambda: {"kind": "local"})
    database: dict[str, Any] | None = None

    def add(self, level: Level, area: str, message: str) -> None:
        """Record a finding."""
        self.findings.append(Finding(level, area, message))

    @property
    def problems(self) -> list[Finding]:
        """Return the findings that make `doctor` exit 1."""
        return [f for f in self.findings if f.level == "problem"]

    def as_json(self) -> dict[str, Any]:
        """Return the report as JSON-ready data."""
        return {
            "ok": not self.problems,
            "root": self.root,
            "projects": self.projects,
            "model": self.model,
            "store": self.store,
            **({"database": self.database} if self.database is not None else {}),
            "findings": [f.__dict__ for f in self.findings],
            "problems": [f"{f.area}: {f.message}" for f in self.problems],
            "warnings": [f"{f.area}: {f.message}" for f in self.findings if f.level == "warning"],
        }
