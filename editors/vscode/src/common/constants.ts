/** The wire contract's method names and error codes; mirrors `lsp_server/protocol.py`. */

// Requests (client → server)
export const CHAT = "agentAssist/chat";
export const SAVE = "agentAssist/save";
export const RESET = "agentAssist/reset";
export const RESUME = "agentAssist/resume";
export const CHECKPOINT = "agentAssist/checkpoint";
export const COMPACT = "agentAssist/compact";
export const SESSIONS = "agentAssist/sessions";
export const OPEN = "agentAssist/open";
export const FORK = "agentAssist/fork";
export const SEARCH = "agentAssist/search";
export const HISTORY = "agentAssist/history";
export const STATUS = "agentAssist/status";

// Notifications (server → client)
export const CHAT_DELTA = "agentAssist/chatDelta";
export const CHAT_RETRY = "agentAssist/chatRetry";
export const TOOL_CALL = "agentAssist/toolCall";
export const DRIFT = "agentAssist/drift";
export const SESSION_CHANGED = "agentAssist/sessionChanged";

// JSON-RPC / LSP error codes
export const INVALID_PARAMS = -32602;
export const METHOD_NOT_FOUND = -32601;
export const REQUEST_CANCELLED = -32800;
export const REQUEST_FAILED = -32803;

/** This extension's id; its README explains how to install the server. */
export const EXTENSION_ID = "agent-assist.agent-assist";
