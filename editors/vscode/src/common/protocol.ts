/** Typed params and results of the wire contract (docs/protocol.md). */

export type AutoResume = "ask" | "always" | "never";
export type Persistence = "full" | "metadata";

export interface ModelOptions {
  name?: string;
  baseUrl?: string;
  apiKey?: string;
}

export interface InitializationOptions {
  instanceId: string;
  autoResume: AutoResume;
  persistence: Persistence;
  trackedFiles: string[];
  model?: ModelOptions;
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  requests: number;
}

export interface ChatResult {
  sessionId: string;
  turn: number;
  text: string;
  endReason: string;
  usage: Usage;
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
}

export type TranscriptRole = "user" | "assistant" | "tool" | "notice";

export interface TranscriptItem {
  turn: number;
  role: TranscriptRole;
  text: string;
  endReason?: string;
  status?: string;
}

export interface HistoryResult {
  sessionId: string;
  items: TranscriptItem[];
}

export interface SessionInfo {
  sessionId: string;
  title: string;
  createdAt: string;
  updatedAt: string;
  turns: number;
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
}

export interface ForkResult {
  sessionId: string;
  parentSessionId: string;
  boundary: number;
}

export interface SearchHit {
  sessionId: string;
  seq: number;
  turn: number;
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

/** The drift report as one line per file: `path (modified)`. */
export function describeDrift(params: DriftParams): string[] {
  return [
    ...params.modified.map((p) => `${p} (modified)`),
    ...params.deleted.map((p) => `${p} (deleted)`),
    ...params.created.map((p) => `${p} (created)`),
  ];
}
