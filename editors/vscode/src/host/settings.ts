/** Settings (package.json `contributes.configuration`) parsed into typed objects; no vscode runtime import. */
import * as path from "node:path";
import type {
  AutoResume,
  InitializationOptions,
  McpServerOptions,
  ModelOptions,
  Persistence,
  ToolsOptions,
} from "../common/protocol";

export const SECTION = "agentAssist";

/** The part of `vscode.WorkspaceConfiguration` this module reads. */
export interface ConfigurationReader {
  get(key: string): unknown;
}

export interface Settings {
  serverCommand: string[];
  modelName: string;
  modelBaseUrl: string;
  /** Unset (undefined): the server decides (its environment, else its default). */
  modelMaxRetries: number | undefined;
  modelStreamTimeout: number | undefined;
  modelFirstTokenTimeout: number | undefined;
  modelMaxReplyBytes: number | undefined;
  modelMaxOutputTokens: number | undefined;
  /** Added to the server's built-in protected paths; empty: only those. */
  toolsProtectedPaths: string[];
  toolsMaxCallsPerResponse: number | undefined;
  toolsMaxCallsPerTurn: number | undefined;
  toolsMaxArgumentBytes: number | undefined;
  contextWindow: number | undefined;
  compactAt: number | undefined;
  autoResume: AutoResume;
  persistence: Persistence;
  /** `local`, a PostgreSQL connection string, or empty: the server decides (AGENT_ASSIST_STORE, else `local`). */
  store: string;
  trackedFiles: string[];
  /** The user's MCP servers by name, passed on as they are (the server checks each). */
  mcpServers: Record<string, McpServerOptions>;
}

export const DEFAULT_SETTINGS: Settings = {
  serverCommand: [],
  modelName: "",
  modelBaseUrl: "",
  modelMaxRetries: undefined,
  modelStreamTimeout: undefined,
  modelFirstTokenTimeout: undefined,
  modelMaxReplyBytes: undefined,
  modelMaxOutputTokens: undefined,
  toolsProtectedPaths: [],
  toolsMaxCallsPerResponse: undefined,
  toolsMaxCallsPerTurn: undefined,
  toolsMaxArgumentBytes: undefined,
  contextWindow: undefined,
  compactAt: undefined,
  autoResume: "ask",
  persistence: "full",
  store: "",
  trackedFiles: ["agent_spec.md", "templates/**"],
  mcpServers: {},
};

const AUTO_RESUME: readonly AutoResume[] = ["ask", "always", "never"];
const PERSISTENCE: readonly Persistence[] = ["full", "metadata"];

function oneOf<T extends string>(value: unknown, allowed: readonly T[], fallback: T): T {
  return allowed.find((a) => a === value) ?? fallback;
}

function stringList(value: unknown, fallback: string[]): string[] {
  if (!Array.isArray(value)) {
    return fallback;
  }
  return value.filter((v): v is string => typeof v === "string" && v.trim() !== "");
}

function text(value: unknown): string {
  return typeof value === "string" ? value.trim() : "";
}

/** A number in [min, max] (a whole one if `integer`), else undefined: the server's default applies. */
function numberIn(value: unknown, min: number, max: number, integer: boolean): number | undefined {
  if (typeof value !== "number" || !Number.isFinite(value) || (integer && !Number.isInteger(value))) {
    return undefined;
  }
  return value >= min && value <= max ? value : undefined;
}

/** Parse the `agentAssist` configuration section; a bad value falls back to its default. */
export function readSettings(config: ConfigurationReader): Settings {
  const command = config.get("server.command");
  return {
    serverCommand:
      typeof command === "string"
        ? command.split(/\s+/).filter((p) => p !== "")
        : stringList(command, DEFAULT_SETTINGS.serverCommand),
    modelName: text(config.get("model.name")),
    modelBaseUrl: text(config.get("model.baseUrl")),
    modelMaxRetries: numberIn(config.get("model.maxRetries"), 0, 10, true),
    modelStreamTimeout: numberIn(config.get("model.streamTimeout"), 1, 3600, false),
    modelFirstTokenTimeout: numberIn(config.get("model.firstTokenTimeout"), 1, 3600, false),
    modelMaxReplyBytes: numberIn(config.get("model.maxReplyBytes"), 65_536, 268_435_456, true),
    modelMaxOutputTokens: numberIn(config.get("model.maxOutputTokens"), 1, 1_000_000, true),
    toolsProtectedPaths: stringList(config.get("tools.protectedPaths"), DEFAULT_SETTINGS.toolsProtectedPaths),
    toolsMaxCallsPerResponse: numberIn(config.get("tools.maxCallsPerResponse"), 1, 1000, true),
    toolsMaxCallsPerTurn: numberIn(config.get("tools.maxCallsPerTurn"), 1, 10_000, true),
    toolsMaxArgumentBytes: numberIn(config.get("tools.maxArgumentBytes"), 1024, 67_108_864, true),
    contextWindow: numberIn(config.get("contextWindow"), 1000, 10_000_000, true),
    compactAt: numberIn(config.get("compactAt"), 0.1, 0.95, false),
    autoResume: oneOf(config.get("autoResume"), AUTO_RESUME, DEFAULT_SETTINGS.autoResume),
    persistence: oneOf(config.get("persistence"), PERSISTENCE, DEFAULT_SETTINGS.persistence),
    store: text(config.get("store")),
    trackedFiles: stringList(config.get("trackedFiles"), DEFAULT_SETTINGS.trackedFiles),
    mcpServers: mcpServers(config.get("mcpServers")),
  };
}

/** The `mcpServers` object's entries that are objects (the server checks their fields). */
function mcpServers(value: unknown): Record<string, McpServerOptions> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return {};
  }
  const servers: Record<string, McpServerOptions> = {};
  const entries: [string, unknown][] = Object.entries(value);
  for (const [name, server] of entries) {
    if (typeof server === "object" && server !== null && !Array.isArray(server)) {
      servers[name] = server;
    }
  }
  return servers;
}

/** The server's `initializationOptions`; empty fields are left to the server (its environment, its defaults). */
export function toInitializationOptions(
  settings: Settings,
  instanceId: string,
  apiKey: string | undefined,
): InitializationOptions {
  const model: ModelOptions = {
    ...(settings.modelName ? { name: settings.modelName } : {}),
    ...(settings.modelBaseUrl ? { baseUrl: settings.modelBaseUrl } : {}),
    ...(apiKey ? { apiKey } : {}),
    ...(settings.modelMaxRetries === undefined ? {} : { maxRetries: settings.modelMaxRetries }),
    ...(settings.modelStreamTimeout === undefined ? {} : { streamTimeout: settings.modelStreamTimeout }),
    ...(settings.modelFirstTokenTimeout === undefined
      ? {}
      : { firstTokenTimeout: settings.modelFirstTokenTimeout }),
    ...(settings.modelMaxReplyBytes === undefined ? {} : { maxReplyBytes: settings.modelMaxReplyBytes }),
    ...(settings.modelMaxOutputTokens === undefined ? {} : { maxOutputTokens: settings.modelMaxOutputTokens }),
  };
  const tools: ToolsOptions = {
    ...(settings.toolsProtectedPaths.length > 0 ? { protectedPaths: settings.toolsProtectedPaths } : {}),
    ...(settings.toolsMaxCallsPerResponse === undefined
      ? {}
      : { maxCallsPerResponse: settings.toolsMaxCallsPerResponse }),
    ...(settings.toolsMaxCallsPerTurn === undefined ? {} : { maxCallsPerTurn: settings.toolsMaxCallsPerTurn }),
    ...(settings.toolsMaxArgumentBytes === undefined ? {} : { maxArgumentBytes: settings.toolsMaxArgumentBytes }),
  };
  return {
    instanceId,
    autoResume: settings.autoResume,
    persistence: settings.persistence,
    trackedFiles: settings.trackedFiles,
    driftMessages: false, // the drift notification is shown instead (drift.ts)
    ...(settings.store ? { store: settings.store } : {}),
    ...(settings.contextWindow === undefined ? {} : { contextWindow: settings.contextWindow }),
    ...(settings.compactAt === undefined ? {} : { compactAt: settings.compactAt }),
    ...(Object.keys(model).length > 0 ? { model } : {}),
    ...(Object.keys(tools).length > 0 ? { tools } : {}),
    ...(Object.keys(settings.mcpServers).length > 0 ? { mcpServers: settings.mcpServers } : {}),
  };
}

/**
 * Settings the running server cannot take (it reads them once, at start); every other
 * setting reaches it live through `workspace/didChangeConfiguration`.
 */
export const RESTART_SETTINGS = ["server.command", "store", "persistence", "trackedFiles", "mcpServers"] as const;

/**
 * The options to send the running server (`workspace/configuration`, `workspace/didChangeConfiguration`):
 * `current`, with what it reads only at start kept as it started (`started`), so the server does not
 * warn about those a second time (the extension offers the restart); and a cleared model name, base
 * URL or key sent as null, so the server falls back to its environment as at start (an absent key
 * would keep the value it had: the server lays the answer over its options).
 */
export function liveOptions(current: InitializationOptions, started: InitializationOptions): InitializationOptions {
  // an undefined value is left out of the message (JSON), as it was left out at start
  return {
    ...current,
    instanceId: started.instanceId,
    persistence: started.persistence,
    trackedFiles: started.trackedFiles,
    store: started.store,
    model: { name: null, baseUrl: null, apiKey: null, ...current.model },
  };
}

/** The restart-only settings `affects` says changed (`affects` is `ConfigurationChangeEvent.affectsConfiguration`). */
export function changedRestartSettings(affects: (section: string) => boolean): string[] {
  return RESTART_SETTINGS.filter((key) => affects(`${SECTION}.${key}`));
}

/**
 * The answer to `workspace/configuration`: our section gets `options` (the shape of
 * `initializationOptions`, not VS Code's raw settings tree); other items keep `others`.
 */
export function configurationAnswers(
  sections: readonly (string | null | undefined)[],
  options: InitializationOptions,
  others: readonly unknown[],
): unknown[] {
  return sections.map((section, i) => (section === SECTION ? options : (others[i] ?? null)));
}

/** A valid `instanceId` (`^[A-Za-z0-9_.-]{1,64}$`) from random hex. */
export function makeInstanceId(randomHex: string): string {
  return `vscode-${randomHex.replace(/[^A-Za-z0-9]/g, "").slice(0, 16)}`;
}

export function isValidInstanceId(value: unknown): value is string {
  return typeof value === "string" && /^[A-Za-z0-9_.-]{1,64}$/.test(value);
}

export interface ServerCommand {
  command: string;
  args: string[];
}

/**
 * The command that starts the server: the setting, else the workspace's `.venv`, else `PATH`.
 * Returns undefined when nothing executable is found.
 */
export function resolveServerCommand(
  settings: Settings,
  workspaceFolder: string | undefined,
  envPath: string,
  isExecutable: (file: string) => boolean,
): ServerCommand | undefined {
  if (settings.serverCommand.length > 0) {
    const [command, ...args] = settings.serverCommand;
    if (command === undefined) {
      return undefined;
    }
    const found = command.includes(path.sep) ? isExecutable(command) : findOnPath(command, envPath, isExecutable);
    return found === false || found === undefined ? undefined : { command: typeof found === "string" ? found : command, args };
  }
  if (workspaceFolder) {
    for (const venv of [".venv", "venv"]) {
      const candidate = path.join(workspaceFolder, venv, "bin", "agent-assist");
      if (isExecutable(candidate)) {
        return { command: candidate, args: ["serve"] };
      }
    }
  }
  const onPath = findOnPath("agent-assist", envPath, isExecutable);
  return onPath === undefined ? undefined : { command: onPath, args: ["serve"] };
}

function findOnPath(name: string, envPath: string, isExecutable: (file: string) => boolean): string | undefined {
  for (const dir of envPath.split(path.delimiter)) {
    if (dir !== "") {
      const candidate = path.join(dir, name);
      if (isExecutable(candidate)) {
        return candidate;
      }
    }
  }
  return undefined;
}
