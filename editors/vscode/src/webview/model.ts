/** The whole sidebar as data: what the host sent and what the user opened; pure, tested without a DOM. */
import type { HostMessage, ResumeView } from "../common/messages";
import {
  describeTurns,
  type CheckpointInfo,
  type CheckpointRestoreResult,
  type SearchHit,
  type SessionInfo,
  type TranscriptItem,
  type TurnView,
} from "../common/protocol";
import { applyHostMessage, type Transcript } from "./transcript";

export type Panel = "none" | "sessions" | "search";

export interface View {
  transcript: Transcript;
  running: boolean;
  /** Chats queued behind the running one. */
  waiting: number;
  resume: ResumeView | undefined;
  /** Resume banners dismissed (`bannerKey`): the next resume of the same session shows again. */
  dismissed: string[];
  checkpoints: { sessionId: string; list: CheckpointInfo[] };
  /** The restore being confirmed; `plan` is its dry run once the host has it. */
  confirm: { number: number; plan: CheckpointRestoreResult | undefined } | undefined;
  sessions: SessionInfo[] | undefined;
  /** How many sessions the project has: more than `sessions` lists when older ones exist. */
  sessionsTotal: number;
  /** How many sessions without a turn the server folded (not listed, not in the total). */
  sessionsEmpty: number;
  panel: Panel;
  /** `results` undefined while the search runs. */
  search: { query: string; results: SearchHit[] | undefined };
  /** A turn to scroll to (a search hit); `due` once that session's transcript is shown. */
  reveal: { sessionId: string; turn: number | null; due: boolean } | undefined;
  /** The turns whose steps are shown (of the transcript's session). */
  openSteps: number[];
  /** The session's turns with their steps, as the host last sent them; `loading` while it is asked again. */
  steps: { sessionId: string; turns: TurnView[]; loading: boolean; error: string | undefined };
}

/** What a turn's steps toggle shows. */
export interface TurnSteps {
  open: boolean;
  loading: boolean;
  /** Undefined: not known (yet), or the session has no such turn now. */
  turn: TurnView | undefined;
  error: string | undefined;
}

/** What the user did in the view that changes what it shows (no host round trip needed). */
export type UiAction =
  | { type: "ui/panel"; panel: Panel }
  | { type: "ui/dismissBanner" }
  | { type: "ui/confirmRestore"; number: number }
  | { type: "ui/cancelRestore" }
  | { type: "ui/search"; query: string }
  | { type: "ui/reveal"; sessionId: string; turn: number | null }
  | { type: "ui/revealed" }
  /** Open or close the steps of a turn (opening asks the host for them). */
  | { type: "ui/toggleSteps"; turn: number };

export function initialView(transcript: Transcript, dismissed: string[] = []): View {
  return {
    transcript,
    running: false,
    waiting: 0,
    resume: undefined,
    dismissed,
    checkpoints: { sessionId: transcript.sessionId, list: [] },
    confirm: undefined,
    sessions: undefined,
    sessionsTotal: 0,
    sessionsEmpty: 0,
    panel: "none",
    search: { query: "", results: [] },
    reveal: undefined,
    openSteps: [],
    steps: { sessionId: "", turns: [], loading: false, error: undefined },
  };
}

/** The steps toggle of `turn` in this view. */
export function turnSteps(view: View, turn: number): TurnSteps {
  const open = view.openSteps.includes(turn);
  const { steps } = view;
  const known = steps.sessionId === view.transcript.sessionId;
  return {
    open,
    loading: open && steps.loading,
    turn: open && known ? steps.turns.find((t) => t.turn === turn) : undefined,
    error: open ? steps.error : undefined,
  };
}

/** The view after a host message or a user action. */
export function update(view: View, action: HostMessage | UiAction): View {
  switch (action.type) {
    case "ui/panel":
      return { ...view, panel: view.panel === action.panel ? "none" : action.panel };
    case "ui/dismissBanner":
      return view.resume ? { ...view, dismissed: [...view.dismissed, bannerKey(view.resume)].slice(-50) } : view;
    case "ui/confirmRestore":
      return { ...view, confirm: { number: action.number, plan: undefined } };
    case "ui/cancelRestore":
      return { ...view, confirm: undefined };
    case "ui/search":
      return { ...view, search: { query: action.query, results: undefined } };
    case "ui/reveal": {
      const due = action.sessionId === view.transcript.sessionId;
      return { ...view, reveal: { sessionId: action.sessionId, turn: action.turn, due }, panel: "none" };
    }
    case "ui/revealed":
      return { ...view, reveal: undefined };
    case "ui/toggleSteps": {
      if (view.openSteps.includes(action.turn)) {
        return { ...view, openSteps: view.openSteps.filter((t) => t !== action.turn) };
      }
      return { ...view, openSteps: [...view.openSteps, action.turn], steps: { ...view.steps, loading: true, error: undefined } };
    }
    case "steps":
      return action.error === undefined
        ? { ...view, steps: { sessionId: action.sessionId, turns: action.turns, loading: false, error: undefined } }
        : { ...view, steps: { ...view.steps, loading: false, error: action.error } };
    case "state":
      return {
        ...view,
        transcript: applyHostMessage(view.transcript, action),
        running: action.running,
        waiting: action.running ? action.waiting : 0,
      };
    case "resume":
      return { ...view, resume: action.resume };
    case "checkpoints":
      return { ...view, checkpoints: { sessionId: action.sessionId, list: action.checkpoints } };
    case "restorePlan":
      return view.confirm?.number === action.plan.number ? { ...view, confirm: { ...view.confirm, plan: action.plan } } : view;
    case "sessions":
      return { ...view, sessions: action.sessions, sessionsTotal: action.total, sessionsEmpty: action.empty ?? 0 };
    case "searchResults":
      return action.query === view.search.query ? { ...view, search: { query: action.query, results: action.results } } : view;
    case "transcript": {
      const other = action.sessionId !== view.transcript.sessionId;
      const reveal = view.reveal?.sessionId === action.sessionId ? { ...view.reveal, due: true } : view.reveal;
      return {
        ...view,
        transcript: applyHostMessage(view.transcript, action),
        reveal,
        ...(other ? { confirm: undefined, openSteps: [] } : {}),
      };
    }
    default:
      return { ...view, transcript: applyHostMessage(view.transcript, action) };
  }
}

/** One resume of a session: dismissing its banner hides it until the session is resumed, opened or forked again. */
export function bannerKey(resume: ResumeView): string {
  return `${resume.sessionId}|${resume.origin ?? ""}|${resume.lastActive ?? ""}`;
}

/** The resume banner to show, if any: a session with a past (resumed, opened, forked), not dismissed. */
export function banner(view: View): ResumeView | undefined {
  const { resume } = view;
  if (!resume || resume.origin === null || resume.sessionId !== view.transcript.sessionId) {
    return undefined;
  }
  return view.dismissed.includes(bannerKey(resume)) ? undefined : resume;
}

const ORIGIN_LABELS = { resumed: "Resumed session", opened: "Opened session", forked: "Forked session" } as const;

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** `Resumed session · last active 3 hours ago · 1 file changed since`. */
export function bannerHeadline(resume: ResumeView, now: Date): string {
  const parts: string[] = [resume.origin === null ? "Session" : ORIGIN_LABELS[resume.origin]];
  if (resume.lastActive !== null) {
    parts.push(`last active ${relativeTime(resume.lastActive, now)}`);
  }
  const changed = resume.changedFiles.length;
  parts.push(changed === 0 ? "no files changed since" : `${plural(changed, "file")} changed since`);
  return parts.join(" · ");
}

/** `just now`, `5 minutes ago`, `3 hours ago`, `yesterday`, `4 days ago`, else the date. */
export function relativeTime(iso: string, now: Date): string {
  const then = new Date(iso);
  if (Number.isNaN(then.getTime())) {
    return iso;
  }
  const seconds = Math.max(0, (now.getTime() - then.getTime()) / 1000);
  if (seconds < 45) {
    return "just now";
  }
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) {
    return `${plural(minutes, "minute")} ago`;
  }
  const hours = Math.round(minutes / 60);
  if (hours < 24) {
    return `${plural(hours, "hour")} ago`;
  }
  const days = Math.round(hours / 24);
  if (days === 1) {
    return "yesterday";
  }
  return days < 30 ? `${days} days ago` : `on ${then.toISOString().slice(0, 10)}`;
}

/** One row of the transcript: an item, or a checkpoint marker between turns. */
export type Row = { kind: "item"; item: TranscriptItem; index: number } | { kind: "checkpoint"; checkpoint: CheckpointInfo };

/**
 * The transcript with each checkpoint after the turn it was made at: before the first item of
 * a later turn (or of the turn still being sent), else at the end.
 */
export function timeline(items: TranscriptItem[], checkpoints: CheckpointInfo[]): Row[] {
  const rows: Row[] = [];
  const pending = [...checkpoints].sort((a, b) => a.turn - b.turn || a.number - b.number);
  items.forEach((item, index) => {
    const { turn } = item;
    while (turn !== null && pending.length > 0 && (turn < 0 || turn > (pending[0]?.turn ?? Infinity))) {
      const checkpoint = pending.shift();
      if (checkpoint) {
        rows.push({ kind: "checkpoint", checkpoint });
      }
    }
    rows.push({ kind: "item", item, index });
  });
  return [...rows, ...pending.map((checkpoint): Row => ({ kind: "checkpoint", checkpoint }))];
}

/** `Checkpoint 2 · saved after turn 1` or `Checkpoint 3 · auto after turn 2`. */
export function checkpointLabel(checkpoint: CheckpointInfo): string {
  return `Checkpoint ${checkpoint.number} · ${checkpointWhen(checkpoint)}`;
}

/** `saved after turn 1`, `auto after turn 2`, `saved before the first turn`. */
export function checkpointWhen(checkpoint: CheckpointInfo): string {
  const when = checkpoint.turn === 0 ? "before the first turn" : `after turn ${checkpoint.turn}`;
  return `${checkpoint.auto ? "auto" : "saved"} ${when}`;
}

/** What the restore confirmation lists, from the dry run. */
export function restoreLines(plan: CheckpointRestoreResult): { change: string[]; kept: string[]; skipped: string[] } {
  const withheld = Object.entries(plan.withheldFiles);
  return {
    change: plan.restoredFiles,
    kept: plan.createdFiles,
    skipped: [
      ...plan.skippedFiles.filter((f) => !(f in plan.withheldFiles)),
      ...withheld.map(([file, why]) => `${file} (${why})`),
    ],
  };
}

export function sessionTitle(session: SessionInfo | undefined): string {
  return session?.title || "(untitled)";
}

/** `0123abcd · 3 turns · code · last active 5 minutes ago · forked from “design” (fedc9876)`. */
export function sessionMeta(session: SessionInfo, all: SessionInfo[], now: Date): string {
  const parts = [
    session.sessionId.slice(0, 8),
    describeTurns(session.turns, session.phase),
    `last active ${relativeTime(session.updatedAt, now)}`,
  ];
  const parentId = session.parentSessionId;
  if (parentId) {
    const parent = all.find((s) => s.sessionId === parentId);
    parts.push(`forked from ${parent ? `“${sessionTitle(parent)}” (${parentId.slice(0, 8)})` : parentId.slice(0, 8)}`);
  }
  return parts.join(" · ");
}

/** A search snippet split at its `[` `]` match marks. */
export function snippetParts(snippet: string): { text: string; match: boolean }[] {
  const flat = snippet.replace(/\s+/g, " ");
  const parts: { text: string; match: boolean }[] = [];
  let at = 0;
  for (const m of flat.matchAll(/\[([^\][]*)\]/g)) {
    if (m.index > at) {
      parts.push({ text: flat.slice(at, m.index), match: false });
    }
    parts.push({ text: m[1] ?? "", match: true });
    at = m.index + m[0].length;
  }
  return at < flat.length ? [...parts, { text: flat.slice(at), match: false }] : parts;
}

/** The user's earlier messages, oldest first, without repeats in a row: what Up walks back through. */
export function sentMessages(items: TranscriptItem[]): string[] {
  const out: string[] = [];
  for (const item of items) {
    if (item.role === "user" && item.text !== out.at(-1)) {
      out.push(item.text);
    }
  }
  return out;
}

/**
 * Up (`-1`) and Down (`+1`) through the sent messages. `index` undefined: not recalling yet
 * (Up starts at the last one). Past the newest: back to an empty input (`index` undefined).
 */
export function recall(sent: string[], index: number | undefined, direction: -1 | 1): { index: number | undefined; text: string } {
  if (sent.length === 0) {
    return { index: undefined, text: "" };
  }
  const from = index ?? sent.length;
  const next = Math.min(Math.max(from + direction, 0), sent.length);
  return next === sent.length ? { index: undefined, text: "" } : { index: next, text: sent[next] ?? "" };
}

/** The input after waiting messages were withdrawn: their texts first (in the order sent), then what was typed since. */
export function withdrawnDraft(texts: readonly string[], current: string): string {
  return [...texts, current].filter((text) => text.trim() !== "").join("\n\n");
}

/** `Working… · 2 waiting`. */
export function workingText(view: View): string {
  return view.waiting > 0 ? `Working… · ${view.waiting} waiting` : "Working…";
}
