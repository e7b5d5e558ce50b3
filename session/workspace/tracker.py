"""The workspace as one session follows it: what is tracked, what the assistant touched, drift.

`WorkspaceTracker` keeps the latest manifest (the baseline drift is measured against),
the files the assistant read or wrote (their content is not drift), and the drift reports
not yet told to the model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from itertools import filterfalse
from pathlib import Path

from .drift import DriftReport, compare_manifests, detect_file_drift
from .manifest import Manifest
from .patterns import TrackedPatterns
from .prefetch import Prefetch, read_hint, scan_hint, write_hint
from .safe_paths import is_safe_relative_path
from .scanner import build_file_manifest

EMPTY_DIGEST = hashlib.sha256(b"").hexdigest()


class WorkspaceTracker:
    """The tracked files of one workspace as a session sees them."""

    def __init__(
        self, root: Path, patterns: TrackedPatterns, hint_path: Path | None = None
    ) -> None:
        self.root = root
        self.patterns = patterns
        self.hint_path = hint_path  # the scan hint of this workspace (`prefetch`)
        self._prefetch: Prefetch | None = None
        self._assistant_paths: set[str] = set()
        self._recorded: Iterable[str] = ()  # a resumed manifest's paths (_sort_out_recorded)
        self.manifest: Manifest | None = None
        self.pending_drift: list[DriftReport] = []
        # path -> digests of what the assistant wrote there that disk has not shown yet
        self._written: dict[str, list[str]] = {}
        self.unsaved: set[str] = set()  # tracked files opened with text not on disk, untold

    @property
    def assistant_paths(self) -> set[str]:
        """Return the files the assistant read or wrote that no tracked glob covers."""
        self._sort_out_recorded()
        return self._assistant_paths

    def _sort_out_recorded(self) -> None:
        # A resumed manifest's paths outside the globs are the assistant's: found when first
        # asked for (a C loop, ~9 ms at 100,000 paths), not on the resume's way.
        if self._recorded:
            self._assistant_paths.update(filterfalse(self.patterns.fullmatch, self._recorded))
            self._recorded = ()

    def prefetch(self) -> None:
        """Start the finds a resume of the last recorded scan needs, before it is read."""
        self.drop_prefetch()
        hint = None if self.hint_path is None else read_hint(self.hint_path)
        if hint is not None:
            self._prefetch = Prefetch(self.root, hint, self.patterns)

    def drop_prefetch(self) -> None:
        """Stop the prefetched finds no scan took."""
        if self._prefetch is not None:
            self._prefetch.close()
            self._prefetch = None

    def _new_baseline(self, manifest: Manifest) -> Manifest:
        """Keep `manifest` as the baseline to record; leave the hint its next scan needs."""
        self.manifest = manifest
        if self.hint_path is not None:
            write_hint(self.hint_path, scan_hint(manifest))
        return manifest

    def baseline(self) -> Manifest:
        """Hash the tracked files (and the assistant's) anew: the baseline from now on."""
        self.drop_prefetch()
        return self._new_baseline(
            build_file_manifest(self.root, self.patterns, extra=self.assistant_paths)
        )

    def resume(self, recorded: Mapping[str, str], previous: Manifest) -> DriftReport:
        """Compare the files with a resumed session's manifest (`previous`: with its stat cache).

        Finds `prefetch` started are used if they are the ones this scan needs.
        """
        try:
            drift, self.manifest = detect_file_drift(
                self.root, recorded, self.patterns, previous, self._prefetch
            )
        finally:
            self.drop_prefetch()
        self._sort_out_recorded()  # those of an earlier resume, if still there
        self._recorded = list(recorded)
        return drift

    def refresh(self, recorded: Iterable[str]) -> Manifest:
        """Rebuild the manifest (reusing the stat cache), covering the `recorded` paths too."""
        self.drop_prefetch()
        extra = set(self.assistant_paths) | set(recorded)
        return self._new_baseline(
            build_file_manifest(self.root, self.patterns, extra=extra, previous=self.manifest)
        )

    def note_file(self, relative: str) -> None:
        """Track a file the assistant read or wrote; its current content is not drift."""
        if not is_safe_relative_path(self.root, relative):
            return
        self.assistant_paths.add(relative)
        fresh = build_file_manifest(self.root, TrackedPatterns(()), extra=[relative])
        manifest = self.manifest if self.manifest is not None else Manifest()
        manifest.forget_listing()
        manifest.files.pop(relative, None)
        manifest.stats.pop(relative, None)
        manifest.files.update(fresh.files)
        manifest.stats.update(fresh.stats)
        self.manifest = manifest

    def note_write(self, relative: str, content: bytes) -> bool:
        """Record that the assistant wrote `content` (maybe unsaved in an editor): not drift.

        Return False (nothing noted) for a path that is not safe inside the workspace.
        """
        if not is_safe_relative_path(self.root, relative):
            return False
        self.assistant_paths.add(relative)
        manifest = self.manifest if self.manifest is not None else Manifest()
        manifest.forget_listing()
        digest = manifest.files[relative] = hashlib.sha256(content).hexdigest()
        self._written.setdefault(relative, []).append(digest)
        manifest.stats.pop(relative, None)  # no stat shortcut: the next check hashes it
        self.manifest = manifest
        return True

    def note_creating(self, relative: str) -> None:
        """Note that the assistant is about to create `relative` through the editor.

        An editor creates the file empty on disk first (`CreateFile`), then fills its
        buffer: that empty file, seen before or after `note_write`, is the assistant's.
        """
        if is_safe_relative_path(self.root, relative):
            self.assistant_paths.add(relative)
            self._written.setdefault(relative, []).append(EMPTY_DIGEST)

    def note_open_document(self, relative: str, content: bytes) -> bool:
        """Note a tracked file the editor opened with text that is not on disk; True if so.

        Not the assistant's own unsaved write: the model knows what it wrote.
        """
        if not is_safe_relative_path(self.root, relative):
            return False
        base = self.manifest if self.manifest is not None else Manifest()
        if not (
            relative in base.files
            or relative in self.assistant_paths
            or self.patterns.matches(relative)
        ):
            return False
        digest = hashlib.sha256(content).hexdigest()
        disk = build_file_manifest(self.root, TrackedPatterns(()), extra=[relative])
        if disk.files.get(relative) == digest or digest in self._written.get(relative, ()):
            return False
        self.unsaved.add(relative)
        return True

    def take_drift_note(self) -> str | None:
        """Return (once) a note for the model about files changed outside the assistant."""
        unsaved = self._take_unsaved_note()
        if not self.pending_drift:
            return unsaved
        modified: dict[str, str] = {}
        for report in self.pending_drift:
            for path in report.modified:
                modified[path] = "modified"
            for path in report.after_assistant_edit:
                modified[path] = "changed by the user after your edit"
            for path in report.deleted:
                modified[path] = "deleted"
            for path in report.created:
                modified[path] = "created"
        self.pending_drift = []
        lines = [f"- {path}: {what}" for path, what in sorted(modified.items())]
        changed = (
            "[workspace notice] These files were changed outside the assistant since your "
            "last reply:\n" + "\n".join(lines) + "\nEarlier tool results for these files "
            "are stale; read them again before relying on their content."
        )
        return changed if unsaved is None else f"{changed}\n\n{unsaved}"

    def _take_unsaved_note(self) -> str | None:
        """Return (once) the note naming tracked files open with unsaved changes."""
        if not self.unsaved:
            return None
        lines = [f"- {path}" for path in sorted(self.unsaved)]
        self.unsaved = set()
        return (
            "[workspace notice] These files are open in the editor with unsaved changes:\n"
            + "\n".join(lines)
            + "\nread_file returns the editor's text; the file on disk is older."
        )

    def check(self, paths: list[str]) -> DriftReport | None:
        """Compare changed `paths` with the manifest, which takes them in; return real drift."""
        base = self.manifest if self.manifest is not None else Manifest()
        relevant = [
            p
            for p in dict.fromkeys(paths)
            if is_safe_relative_path(self.root, p)
            and (p in base.files or p in self.assistant_paths or self.patterns.matches(p))
        ]
        if not relevant:
            return None
        old = {p: base.files[p] for p in relevant if p in base.files}
        fresh = build_file_manifest(self.root, TrackedPatterns(()), extra=relevant)
        report = compare_manifests(
            old, fresh, TrackedPatterns((*self.patterns.patterns, *relevant))
        )
        base.forget_listing()
        for p in relevant:
            base.files.pop(p, None)
            base.stats.pop(p, None)
        base.files.update(fresh.files)
        base.stats.update(fresh.stats)
        self.manifest = base
        self._sort_out_written(report, relevant, fresh)
        if not report.has_drift:
            return None
        report.unchanged = len(base.files) - len(report.modified) - len(report.created)
        return report

    def _sort_out_written(self, report: DriftReport, paths: list[str], fresh: Manifest) -> None:
        """Take the assistant's writes that reached disk out of `report`; name the user's.

        The baseline may hold what disk had before an unsaved write (a checkpoint hashes
        disk), so a save of the assistant's content would otherwise look like drift.
        """
        for path in paths:
            written = self._written.get(path)
            if written is None:
                continue
            now = fresh.files.get(path)
            if now is not None and now in written:  # the assistant's content is on disk
                del written[: written.index(now) + 1]
                if not written:
                    del self._written[path]
                if path in report.modified:
                    report.modified.remove(path)
                if path in report.created:
                    report.created.remove(path)
            elif path in report.modified or path in report.created or path in report.deleted:
                del self._written[path]
                if path in report.modified:
                    report.after_assistant_edit.append(path)
