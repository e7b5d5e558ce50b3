"""Drift: how the tracked files on disk differ from a stored manifest."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .manifest import Manifest
from .patterns import TrackedPatterns
from .safe_paths import is_lexically_safe
from .scanner import build_file_manifest

_ABSENT = object()


@dataclass
class DriftReport:
    """How the tracked files differ from a manifest."""

    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    unchanged: int = 0
    unsafe: list[str] = field(default_factory=list)

    @property
    def has_drift(self) -> bool:
        """Return True if anything changed."""
        return bool(self.modified or self.deleted or self.created)


def compare_manifests(
    old: Mapping[str, str], new: Manifest, patterns: TrackedPatterns | None = None
) -> DriftReport:
    """Diff a stored manifest against a fresh one."""
    patterns = patterns or TrackedPatterns()
    report = DriftReport()
    if new.files == old:  # the usual case, compared in C
        report.unchanged = len(old)
        return report
    files = new.files
    differ = [r for r, digest in old.items() if files.get(r, _ABSENT) != digest]
    report.modified = [relative for relative in differ if relative in files]
    report.deleted = [relative for relative in differ if relative not in files]
    report.unchanged = len(old) - len(differ)
    if len(files) > len(old) - len(report.deleted):  # some files are not in `old`
        report.created = sorted(r for r in files.keys() - old.keys() if patterns.matches(r))
    report.modified.sort()
    report.deleted.sort()
    return report


def detect_file_drift(
    root: Path,
    manifest: Mapping[str, str],
    patterns: TrackedPatterns | None = None,
    previous: Manifest | None = None,
) -> tuple[DriftReport, Manifest]:
    """Compare tracked files on disk with `manifest`; unsafe stored paths are skipped."""
    patterns = patterns or TrackedPatterns()
    current = build_file_manifest(root, patterns, extra=manifest.keys(), previous=previous)
    # Paths met by the walk are safe by construction; the rest were checked with resolve()
    # in list_tracked_files. Only those that failed the lexical check are reported unsafe.
    unsafe = []
    if not current.files.keys() >= manifest.keys():
        unsafe = [k for k in manifest.keys() - current.files.keys() if not is_lexically_safe(k)]
    safe = {k: v for k, v in manifest.items() if k not in unsafe} if unsafe else manifest
    report = compare_manifests(safe, current, patterns)
    report.unsafe = sorted(str(k) for k in unsafe)
    return report, current
