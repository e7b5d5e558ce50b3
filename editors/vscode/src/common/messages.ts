/** Typed messages between the sidebar webview and the extension host (only the host talks to the server). */
import {
  type Guard,
  isArrayOf,
  isBoolean,
  isMapOf,
  isNullable,
  isNumber,
  isObject,
  isOneOf,
  isOptional,
  isRecord,
  isString,
} from "./guards";
import type {
  ChangedFile,
  CheckpointInfo,
  CheckpointRestoreResult,
  ResumeResult,
  SearchHit,
  SessionInfo,
  StepRetry,
  StepTool,
  StepView,
  TranscriptItem,
  TranscriptRole,
  TurnView,
  Usage,
} from "./protocol";

/** Webview → extension. */
export type WebviewMessage =
  | { type: "ready" }
  | { type: "send"; text: string }
  | { type: "stop" }
  /** Take back the messages waiting behind the running reply. */
  | { type: "withdraw" }
  | { type: "copy"; text: string }
  | { type: "insert"; text: string }
  | { type: "command"; command: ViewCommand }
  | { type: "openFile"; path: string }
  | { type: "diffFile"; path: string }
  | { type: "listSessions" }
  /** List a page more of the older sessions. */
  | { type: "moreSessions" }
  | { type: "openSession"; sessionId: string }
  | { type: "forkSession"; sessionId: string }
  | { type: "previewRestore"; number: number }
  | { type: "restore"; number: number }
  | { type: "search"; query: string }
  /** The unsent message changed (kept by the host across reloads). */
  | { type: "draft"; text: string }
  /** The steps of this session's turns (a turn's steps toggle was opened). */
  | { type: "loadSteps" };

/** Commands the webview's toolbar may trigger. */
export type ViewCommand = "newSession" | "saveSession" | "listSessions" | "searchSessions" | "checkpoints";

export const VIEW_COMMANDS: readonly ViewCommand[] = [
  "newSession",
  "saveSession",
  "listSessions",
  "searchSessions",
  "checkpoints",
];

/** What the resume banner shows: `agentAssist/resume` of the session it is about. */
export interface ResumeView extends ResumeResult {
  sessionId: string;
}

/** Extension → webview. */
export type HostMessage =
  | { type: "transcript"; sessionId: string; items: TranscriptItem[] }
  | { type: "userMessage"; text: string }
  | { type: "delta"; turn: number; delta: string }
  | { type: "retry"; turn: number; attempt: number; reason: string }
  | { type: "tool"; turn: number; tool: string; status: string; detail: string }
  | { type: "turnEnd"; turn: number; text: string; endReason: string }
  | { type: "error"; text: string }
  /** `waiting`: chats queued behind the running one. */
  | { type: "state"; running: boolean; sessionId: string; waiting: number }
  | { type: "resume"; resume: ResumeView }
  | { type: "checkpoints"; sessionId: string; checkpoints: CheckpointInfo[] }
  /** A restore's dry run, for the confirmation that lists the files. */
  | { type: "restorePlan"; plan: CheckpointRestoreResult }
  /**
   * The newest sessions, and how many the project has (`total` > listed: older ones exist);
   * `empty`: how many without a turn the server folded (not listed, not in `total`).
   */
  | { type: "sessions"; sessions: SessionInfo[]; total: number; empty?: number }
  | { type: "searchResults"; query: string; results: SearchHit[] }
  /** The unsent message the host kept, for a view that lost its own state. */
  | { type: "draft"; text: string }
  /** Waiting messages taken back: their texts go back into the input. */
  | { type: "withdrawn"; texts: string[] }
  /** Each turn of the session with its steps (`history {steps: true}`); `error` when it could not be read. */
  | { type: "steps"; sessionId: string; turns: TurnView[]; error?: string };

const isId = (value: unknown): value is string => typeof value === "string" && value !== "";
const isCheckpointNumber = (value: unknown): value is number => Number.isInteger(value) && Number(value) >= 1;

/** Validate a message posted by the webview; anything malformed gives undefined. */
export function parseWebviewMessage(value: unknown): WebviewMessage | undefined {
  if (!isRecord(value)) {
    return undefined;
  }
  const { type } = value;
  switch (type) {
    case "ready":
    case "stop":
    case "withdraw":
    case "listSessions":
    case "moreSessions":
    case "loadSteps":
      return { type };
    case "send":
      return typeof value.text === "string" && value.text.trim() !== "" ? { type, text: value.text } : undefined;
    case "search":
      return typeof value.query === "string" && value.query.trim() !== "" ? { type, query: value.query } : undefined;
    case "copy":
    case "insert":
    case "draft":
      return typeof value.text === "string" ? { type, text: value.text } : undefined;
    case "openFile":
    case "diffFile":
      return isId(value.path) ? { type, path: value.path } : undefined;
    case "openSession":
    case "forkSession":
      return isId(value.sessionId) ? { type, sessionId: value.sessionId } : undefined;
    case "previewRestore":
    case "restore":
      return isCheckpointNumber(value.number) ? { type, number: value.number } : undefined;
    case "command": {
      const command = VIEW_COMMANDS.find((c) => c === value.command);
      return command === undefined ? undefined : { type, command };
    }
    default:
      return undefined;
  }
}

const ROLES: readonly TranscriptRole[] = ["user", "assistant", "tool", "notice"];

function parseItem(value: unknown): TranscriptItem | undefined {
  if (!isRecord(value) || typeof value.text !== "string") {
    return undefined;
  }
  // `turn: null` is a notice outside any turn (the compaction notice): kept, not dropped
  const turn = typeof value.turn === "number" || value.turn === null ? value.turn : undefined;
  if (turn === undefined) {
    return undefined;
  }
  const role = ROLES.find((r) => r === value.role);
  if (role === undefined) {
    return undefined;
  }
  return {
    turn,
    role,
    text: value.text,
    ...(typeof value.endReason === "string" ? { endReason: value.endReason } : {}),
    ...(typeof value.status === "string" ? { status: value.status } : {}),
    ...(value.partial === true ? { partial: true } : {}),
  };
}

export const isChangedFile: Guard<ChangedFile> = isObject({
  path: isString,
  change: isOneOf(["modified", "deleted", "created"] as const),
  checkpoint: isNullable(isNumber),
});

export const isResumeView: Guard<ResumeView> = isObject({
  sessionId: isString,
  context: isString,
  origin: isNullable(isOneOf(["resumed", "opened", "forked"] as const)),
  lastActive: isNullable(isString),
  summary: isNullable(isString),
  decisions: isArrayOf(isString),
  changedFiles: isArrayOf(isChangedFile),
});

export const isCheckpointInfo: Guard<CheckpointInfo> = isObject({
  number: isNumber,
  createdAt: isString,
  turn: isNumber,
  title: isString,
  auto: isBoolean,
});

export const isRestorePlan: Guard<CheckpointRestoreResult> = isObject({
  sessionId: isString,
  number: isNumber,
  restoredFiles: isArrayOf(isString),
  createdFiles: isArrayOf(isString),
  skippedFiles: isArrayOf(isString),
  withheldFiles: isMapOf(isString),
  dryRun: isOptional(isBoolean),
});

export const isSessionInfo: Guard<SessionInfo> = isObject({
  sessionId: isString,
  title: isNullable(isString),
  createdAt: isString,
  updatedAt: isString,
  turns: isNumber,
  phase: isOptional(isOneOf(["design", "code", "deploy"] as const)),
  parentSessionId: isOptional(isString),
  active: isBoolean,
});

export const isSearchHit: Guard<SearchHit> = isObject({
  sessionId: isString,
  seq: isNumber,
  turn: isNullable(isNumber),
  type: isString,
  snippet: isString,
  score: isNumber,
  step: isNullable(isNumber),
  ts: isNullable(isString),
});

const isUnknown: Guard<unknown> = (value): value is unknown => value !== undefined;

export const isUsage: Guard<Usage> = isObject({
  inputTokens: isNumber,
  outputTokens: isNumber,
  requests: isNumber,
  estimated: isOptional(isBoolean),
});

export const isStepTool: Guard<StepTool> = isObject({
  toolCallId: isString,
  name: isString,
  args: isUnknown,
  result: isNullable(isString),
  folded: isOptional(isBoolean),
  resultBytes: isNumber,
  isError: isOptional(isBoolean),
});

const isStepRetry: Guard<StepRetry> = isObject({ attempt: isNumber, kind: isString, reason: isString });

export const isStepView: Guard<StepView> = isObject({
  turn: isNumber,
  step: isNumber,
  startedAt: isNullable(isString),
  endedAt: isNullable(isString),
  model: isNullable(isString),
  usage: isNullable(isUsage),
  text: isString,
  tools: isArrayOf(isStepTool),
  retries: isOptional(isArrayOf(isStepRetry)),
  endReason: isNullable(isString),
  requestSha256: isOptional(isString),
});

export const isTurnView: Guard<TurnView> = isObject({
  turn: isNumber,
  input: isString,
  startedAt: isNullable(isString),
  endedAt: isNullable(isString),
  endReason: isNullable(isString),
  steps: isArrayOf(isStepView),
});

/** Each host message but the transcript (whose bad items are dropped, not fatal), by type. */
const HOST_MESSAGES = {
  userMessage: isObject({ type: isOneOf(["userMessage"] as const), text: isString }),
  delta: isObject({ type: isOneOf(["delta"] as const), turn: isNumber, delta: isString }),
  retry: isObject({ type: isOneOf(["retry"] as const), turn: isNumber, attempt: isNumber, reason: isString }),
  tool: isObject({
    type: isOneOf(["tool"] as const),
    turn: isNumber,
    tool: isString,
    status: isString,
    detail: isString,
  }),
  turnEnd: isObject({ type: isOneOf(["turnEnd"] as const), turn: isNumber, text: isString, endReason: isString }),
  error: isObject({ type: isOneOf(["error"] as const), text: isString }),
  draft: isObject({ type: isOneOf(["draft"] as const), text: isString }),
  withdrawn: isObject({ type: isOneOf(["withdrawn"] as const), texts: isArrayOf(isString) }),
  steps: isObject({
    type: isOneOf(["steps"] as const),
    sessionId: isString,
    turns: isArrayOf(isTurnView),
    error: isOptional(isString),
  }),
  state: isObject({ type: isOneOf(["state"] as const), running: isBoolean, sessionId: isString, waiting: isNumber }),
  resume: isObject({ type: isOneOf(["resume"] as const), resume: isResumeView }),
  checkpoints: isObject({
    type: isOneOf(["checkpoints"] as const),
    sessionId: isString,
    checkpoints: isArrayOf(isCheckpointInfo),
  }),
  restorePlan: isObject({ type: isOneOf(["restorePlan"] as const), plan: isRestorePlan }),
  sessions: isObject({
    type: isOneOf(["sessions"] as const),
    sessions: isArrayOf(isSessionInfo),
    total: isNumber,
    empty: isOptional(isNumber),
  }),
  searchResults: isObject({
    type: isOneOf(["searchResults"] as const),
    query: isString,
    results: isArrayOf(isSearchHit),
  }),
} satisfies { [K in Exclude<HostMessage["type"], "transcript">]: Guard<Extract<HostMessage, { type: K }>> };

/** Validate a message posted by the extension (the webview side of the contract). */
export function parseHostMessage(value: unknown): HostMessage | undefined {
  if (!isRecord(value)) {
    return undefined;
  }
  if (value.type === "transcript") {
    return typeof value.sessionId === "string" && Array.isArray(value.items)
      ? {
          type: "transcript",
          sessionId: value.sessionId,
          items: value.items.map(parseItem).filter((i): i is TranscriptItem => i !== undefined),
        }
      : undefined;
  }
  const guard = Object.entries(HOST_MESSAGES).find(([type]) => type === value.type)?.[1];
  return guard?.(value) ? value : undefined;
}

/** One short line describing a tool call's arguments, e.g. `path=src/a.py`. */
export function describeToolArgs(args: unknown): string {
  if (!isRecord(args)) {
    return args === undefined || args === null ? "" : JSON.stringify(args);
  }
  return Object.entries(args)
    .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(" ")
    .slice(0, 200);
}
