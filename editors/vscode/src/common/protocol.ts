/** The wire contract: the generated module (lsp_server/protocol/) and a few helpers of this client. */
import type { ChatResult, ChatStarted, DriftParams, Phase } from "./protocol.generated";

export * from "./protocol.generated";

/** The turn count with the phase when there is one: `12 turns · code`. */
export function describeTurns(turns: number, phase?: Phase | null): string {
  const count = `${turns} ${turns === 1 ? "turn" : "turns"}`;
  return phase ? `${count} · ${phase}` : count;
}

/** The drift report as one line per file: `path (modified)`. */
export function describeDrift(params: DriftParams): string[] {
  return [
    ...params.modified.map((p) =>
      params.afterAssistantEdit.includes(p) ? `${p} (changed after the assistant's edit)` : `${p} (modified)`,
    ),
    ...params.deleted.map((p) => `${p} (deleted)`),
    ...params.created.map((p) => `${p} (created)`),
  ];
}

/** A chat's result; this client never sends `async`, so the server never answers `ChatStarted`. */
export function completedTurn(result: ChatResult | ChatStarted): ChatResult {
  if (!("text" in result)) throw new Error("the server answered a chat sent without async as async");
  return result;
}
