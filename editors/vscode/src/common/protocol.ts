/** Typed params and results of the wire contract (docs/protocol.md). */

export type AutoResume = "ask" | "always" | "never";
export type Persistence = "full" | "metadata";
/** The session's phase: the model sets or clears it with its `set_phase` tool. */
export type Phase = "design" | "code" | "deploy";

export interface ModelOptions {
  name?: string;
  baseUrl?: string;
  apiKey?: string;
  /** Retries of a failed model request (0..10; the server's default is 2). */
  maxRetries?: number;
  /** Seconds without stream data before an attempt is abandoned and retried (1..3600; default 60). */
  streamTimeout?: number;
}

export interface InitializationOptions {
  instanceId: string;
  autoResume: AutoResume;
  persistence: Persistence;
  trackedFiles: string[];
  model?: ModelOptions;
  /** Tokens of the model's context window (1000..10000000; the server's default is 128000). */
  contextWindow?: number;
  /** Fraction of `contextWindow` at which older turns are compacted (0.1..0.95; default 0.6). */
  compactAt?: number;
  /** False: the server does not repeat resume drift as `window/showMessage` (this client renders `agentAssist/drift`). */
  driftMessages?: boolean;
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  requests: number;
  /** The token counts are estimated: the model server sent none. */
  estimated?: boolean;
}

export interface ChatResult {
  sessionId: string;
  turn: number;
  text: string;
  endReason: string;
  usage: Usage;
  /** Model attempts the turn took (more than 1 after retries). */
  attempts: number;
}

export interface SaveResult {
  sessionId: string;
  checkpoint: number;
  savedAt: string;
  path: string;
}

export interface ResetResult {
  sessionId: string;
  deletedFiles: string[];
}

export interface ResumeResult {
  context: string;
}

export interface StatusResult {
  sessionId: string;
  state: "idle" | "running";
  waiting: number;
  resumed: boolean;
  turns: number;
  model: string | null;
  drift: number;
  readOnly: boolean;
  persistence: Persistence;
  /** The context window in use: lower than configured when the model server reported a smaller one. */
  contextWindow: number;
  /** Null when unset. */
  phase: Phase | null;
}

export type TranscriptRole = "user" | "assistant" | "tool" | "notice";

export interface TranscriptItem {
  /** Null for a notice outside any turn, e.g. "Older turns were compacted." */
  turn: number | null;
  role: TranscriptRole;
  text: string;
  endReason?: string;
  status?: string;
  /** An answer cut short (stopped, failed): only what was streamed of it. */
  partial?: boolean;
}

export interface HistoryResult {
  sessionId: string;
  items: TranscriptItem[];
}

export interface SessionInfo {
  sessionId: string;
  title: string | null;
  createdAt: string;
  updatedAt: string;
  turns: number;
  /** Absent when unset. */
  phase?: Phase;
  parentSessionId?: string;
  active: boolean;
}

export interface SessionsResult {
  sessions: SessionInfo[];
}

export interface OpenResult {
  sessionId: string;
  context: string;
}

export interface CheckpointInfo {
  number: number;
  createdAt: string;
  turn: number;
  title: string;
  auto: boolean;
}

export interface CheckpointListResult {
  sessionId: string;
  checkpoints: CheckpointInfo[];
}

export interface CheckpointRestoreResult {
  sessionId: string;
  number: number;
  restoredFiles: string[];
  createdFiles: string[];
  skippedFiles: string[];
}

export interface CompactResult {
  sessionId: string;
  messagesBefore: number;
  messagesAfter: number;
  tokensBefore: number;
  tokensAfter: number;
  compacted: boolean;
  fallback?: boolean;
  /** Why nothing was compacted (when `compacted` is false). */
  reason?: string;
}

export interface ForkResult {
  sessionId: string;
  parentSessionId: string;
  boundary: number;
}

export interface SearchHit {
  sessionId: string;
  seq: number;
  /** Null when the hit is in no turn. */
  turn: number | null;
  type: string;
  snippet: string;
  score: number;
}

export interface SearchResult {
  results: SearchHit[];
}

export interface ChatDeltaParams {
  sessionId: string;
  turn: number;
  delta: string;
}

/** A model attempt failed after some of its text was streamed: drop that text, deltas restart. */
export interface ChatRetryParams {
  sessionId: string;
  turn: number;
  attempt: number;
  reason: string;
}

export interface ToolCallParams {
  sessionId: string;
  turn: number;
  tool: string;
  args: unknown;
  status: "started" | "done" | "failed";
}

export interface DriftParams {
  sessionId: string;
  source: "resume" | "watcher";
  /** The server also showed it as a `window/showMessage` warning. */
  messageShown: boolean;
  modified: string[];
  deleted: string[];
  created: string[];
  unchanged: number;
}

export type SessionChangeReason = "new" | "resumed" | "reset" | "opened" | "forked" | "restored";

export interface SessionChangedParams {
  sessionId: string;
  reason: SessionChangeReason;
}

/** The turn count with the phase when there is one: `12 turns · code`. */
export function describeTurns(turns: number, phase?: Phase | null): string {
  const count = `${turns} ${turns === 1 ? "turn" : "turns"}`;
  return phase ? `${count} · ${phase}` : count;
}

/** The drift report as one line per file: `path (modified)`. */
export function describeDrift(params: DriftParams): string[] {
  return [
    ...params.modified.map((p) => `${p} (modified)`),
    ...params.deleted.map((p) => `${p} (deleted)`),
    ...params.created.map((p) => `${p} (created)`),
  ];
}
