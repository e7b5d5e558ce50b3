"""Workspace files: safe paths, tracked globs, the manifest (sha256 + stat cache) and drift.

- `safe_paths`: which relative paths may be opened;
- `files`: files as checkpoints and restores touch them, never through a symlink or outside;
- `protected`: the files that make a tool run code, written by the model only with a yes;
- `refused_names`: file names a scan never tracks, and saying so;
- `identity`, `git_repository`: the portable project identity (the origin remote with the
  root commit, else the path), from a repository read with nothing it configures run;
- `patterns`: the tracked-file globs and the directories never walked;
- `manifest`: the manifest (hashes, stat cache, files by directory; layered over a previous
  one by a scan) and hashing one file;
- `scanner`: hashing the tracked files, reusing hashes a stat cache proves;
- `find`: the GNU find fast path of the scanner (one or two finds at once);
- `prefetch`: a resume's finds started before its snapshot is read (the scan hint);
- `stat_cache`: packing the manifest and its stat cache into the snapshot, and back;
- `packed`: the packed manifest and stats read as mappings, with nothing built per file;
- `drift`: how the files differ from a stored manifest;
- `spec_files`: `agent_spec.md` and `templates/` (the spec path, what a reset may delete);
- `tracker`: the workspace as one session follows it (manifest, assistant's files, drift notes).
"""
