-- agent_assist.config: Options, defaults and what the server is told at initialize.

--- setup()'s `model` (snake_case); sent as agent_assist.ModelOptions.
---@class agent_assist.ModelConfig
---@field name? string     model name; falls back to $AGENT_ASSIST_LLM_MODEL_NAME in the server
---@field base_url? string OpenAI-compatible base URL; falls back to $AGENT_ASSIST_LLM_BASE_URL
---@field max_retries? integer     retries of a failed model request, 0-10; server: $AGENT_ASSIST_LLM_MAX_RETRIES, else 2
---@field stream_timeout? number   seconds without stream data before an attempt is retried, 1-3600; server: $AGENT_ASSIST_LLM_STREAM_TIMEOUT, else 60
---@field first_token_timeout? number seconds to an answer's first data (a local server reads the prompt first), 1-3600; server: $AGENT_ASSIST_LLM_FIRST_TOKEN_TIMEOUT, else 300
---@field max_reply_bytes? integer bytes of one streamed reply (text and tool-call arguments), 65536-268435456; server default 4194304
---@field max_output_tokens? integer tokens of one answer (sent as max_tokens), 1-1000000; server: $AGENT_ASSIST_LLM_MAX_OUTPUT_TOKENS, else the model server's limit

--- setup()'s `tools` (snake_case): what the model's tools may do; sent as agent_assist.ToolsOptions.
---@class agent_assist.ToolsConfig
---@field protected_paths? string[]       globs the model's file tools write only after you confirm, added to the server's built-in ones
---@field max_calls_per_response? integer tool calls one model response may ask for, 1-1000; server default 64
---@field max_calls_per_turn? integer     tool calls in one turn, 1-10000; server default 256
---@field max_argument_bytes? integer     bytes of one tool call's arguments, 1024-67108864; server default 1048576

---@class agent_assist.Keymaps
---@field prompt string|false  chat buffer, normal mode: open the input prompt
---@field cancel string|false  chat buffer, normal and insert mode: cancel the running turn
---@field close string|false   chat buffer, normal mode: close the window
---@field open_file string|false  session header: open the changed file on the line ("What I remember": toggle its fold)
---@field diff string|false       session header: diff the changed file on the line against its checkpoint copy
---@field dismiss string|false    chat buffer: dismiss the session header
---@field restore string|false    a file-history diff: restore the file as it was before the change

---@class agent_assist.FloatOptions
---@field width number  fraction of the editor width (0-1) or columns
---@field height number fraction of the editor height (0-1) or lines
---@field border string|string[]

---@class agent_assist.Options
---@field cmd? string[]                  server command; default the project's venv or `agent-assist serve`
---@field instance_id? string            default: stable per project root
---@field auto_resume "ask"|"always"|"never"
---@field model agent_assist.ModelConfig the API key is never set here: the server reads it from the environment
---@field tools agent_assist.ToolsConfig  limits of the model's tools; unset fields: the server's defaults
---@field persistence "full"|"metadata"
---@field store? string                  "local" or a PostgreSQL connection string; empty: the server decides
---@field tracked_files? string[]        globs whose drift is watched; default the server's
---@field context_window? integer        tokens of the model's context window, 1000-10000000; server default 128000
---@field compact_at? number             fraction of the window at which older turns are compacted, 0.1-0.95; server default 0.6
---@field mcp_servers? table<string, agent_assist.McpServerOptions> MCP servers whose tools the model may call, by name (`{ command, args, env, cwd }` or `{ url, headers, type }`, `confirm`); read at start
---@field keymaps agent_assist.Keymaps
---@field layout "split"|"vsplit"|"float"
---@field float agent_assist.FloatOptions
---@field root_markers string[]
---@field stop_timeout integer           ms to wait on exit for the server to autosave

local M = {}

---@type agent_assist.Options
M.defaults = {
  cmd = nil,
  instance_id = nil,
  auto_resume = "ask",
  model = {},
  tools = {},
  persistence = "full",
  store = nil,
  tracked_files = nil,
  context_window = nil,
  compact_at = nil,
  mcp_servers = nil,
  keymaps = {
    prompt = "i",
    cancel = "<C-c>",
    close = "q",
    open_file = "<CR>",
    diff = "gd",
    dismiss = "dh",
    restore = "gR",
  },
  layout = "vsplit",
  float = { width = 0.8, height = 0.8, border = "rounded" },
  root_markers = { ".git", "pyproject.toml", "agent_spec.md" },
  stop_timeout = 3000,
}

M.INSTANCE_ID_PATTERN = "^[%w_.-]+$"

---@type agent_assist.Options
local options = vim.deepcopy(M.defaults)

local function is_list(t)
  if vim.islist then
    return vim.islist(t)
  end
  return vim.tbl_islist(t)
end

--- Deep-merge `override` over `base`; lists (and scalars) replace, maps merge.
---@param base table
---@param override table
---@return table
function M.merge(base, override)
  local out = vim.deepcopy(base)
  for key, value in pairs(override) do
    local current = out[key]
    if
      type(value) == "table"
      and type(current) == "table"
      and not is_list(value)
      and not is_list(current)
    then
      out[key] = M.merge(current, value)
    else
      out[key] = vim.deepcopy(value)
    end
  end
  return out
end

local function is_string_list(value)
  if type(value) ~= "table" or not is_list(value) or #value == 0 then
    return false
  end
  for _, item in ipairs(value) do
    if type(item) ~= "string" or item == "" then
      return false
    end
  end
  return true
end

--- A check that `value` is a number in [min, max], a whole one if `integer`.
local function number_in(min, max, integer)
  return function(value)
    return type(value) == "number"
      and value >= min
      and value <= max
      and (not integer or math.floor(value) == value)
  end
end

--- A list of non-blank strings, possibly empty.
local function is_glob_list(value)
  if type(value) ~= "table" or not is_list(value) then
    return false
  end
  for _, item in ipairs(value) do
    if type(item) ~= "string" or vim.trim(item) == "" then
      return false
    end
  end
  return true
end

local function one_of(...)
  local allowed = { ... }
  return function(value)
    return vim.tbl_contains(allowed, value)
  end
end

local MODEL_CHECKS = {
  max_retries = { number_in(0, 10, true), "a whole number, 0-10" },
  stream_timeout = { number_in(1, 3600, false), "a number of seconds, 1-3600" },
  first_token_timeout = { number_in(1, 3600, false), "a number of seconds, 1-3600" },
  max_reply_bytes = {
    number_in(65536, 268435456, true),
    "a whole number of bytes, 65536-268435456",
  },
  max_output_tokens = { number_in(1, 1000000, true), "a whole number of tokens, 1-1000000" },
}

local TOOLS_CHECKS = {
  protected_paths = { is_glob_list, "a list of glob strings" },
  max_calls_per_response = { number_in(1, 1000, true), "a whole number, 1-1000" },
  max_calls_per_turn = { number_in(1, 10000, true), "a whole number, 1-10000" },
  max_argument_bytes = { number_in(1024, 67108864, true), "a whole number of bytes, 1024-67108864" },
}

local CHECKS = {
  cmd = { is_string_list, "a non-empty list of strings" },
  instance_id = {
    function(v)
      return M.valid_instance_id(v)
    end,
    "1-64 characters of A-Z a-z 0-9 _ . -",
  },
  auto_resume = { one_of("ask", "always", "never"), "ask|always|never" },
  persistence = { one_of("full", "metadata"), "full|metadata" },
  store = {
    function(v)
      return type(v) == "string"
    end,
    'a string: "local" or a PostgreSQL connection string',
  },
  tracked_files = { is_string_list, "a list of glob strings" },
  context_window = { number_in(1000, 10000000, true), "a whole number of tokens, 1000-10000000" },
  compact_at = { number_in(0.1, 0.95, false), "a fraction of the context window, 0.1-0.95" },
  mcp_servers = {
    function(v)
      if type(v) ~= "table" or is_list(v) and next(v) ~= nil then
        return false
      end
      for name, server in pairs(v) do
        if type(name) ~= "string" or type(server) ~= "table" then
          return false
        end
      end
      return true
    end,
    "a table { name = { command, args } | { url } }",
  },
  layout = { one_of("split", "vsplit", "float"), "split|vsplit|float" },
  stop_timeout = {
    function(v)
      return type(v) == "number" and v >= 0
    end,
    "a number of milliseconds",
  },
}

--- Return true if `id` is a valid server instance id.
---@param id any
---@return boolean
function M.valid_instance_id(id)
  return type(id) == "string" and #id <= 64 and id:match(M.INSTANCE_ID_PATTERN) ~= nil
end

--- Drop each field of `tbl` that fails its check, noting it under `prefix`.
local function check_fields(tbl, prefix, checks, problems)
  for key, check in pairs(checks) do
    local value = tbl[key]
    if value ~= nil and not check[1](value) then
      table.insert(problems, ("%s.%s must be %s; using the server's"):format(prefix, key, check[2]))
      tbl[key] = nil
    end
  end
end

--- Merge user options over the defaults; an invalid option falls back with a warning.
---@param opts? table
---@return agent_assist.Options
function M.setup(opts)
  opts = opts or {}
  local merged = M.merge(M.defaults, opts)
  local problems = {}
  for key, check in pairs(CHECKS) do
    local value = merged[key]
    if value ~= nil and not check[1](value) then
      table.insert(problems, ("%s must be %s; using the default"):format(key, check[2]))
      merged[key] = vim.deepcopy(M.defaults[key])
    end
  end
  if type(merged.model) ~= "table" then
    table.insert(
      problems,
      "model must be a table { name, base_url, max_retries, stream_timeout, first_token_timeout, "
        .. "max_reply_bytes, max_output_tokens }; using the environment"
    )
    merged.model = {}
  end
  check_fields(merged.model, "model", MODEL_CHECKS, problems)
  if type(merged.tools) ~= "table" then
    table.insert(
      problems,
      "tools must be a table { protected_paths, max_calls_per_response, max_calls_per_turn, "
        .. "max_argument_bytes }; using the server's defaults"
    )
    merged.tools = {}
  end
  check_fields(merged.tools, "tools", TOOLS_CHECKS, problems)
  for _, secret in ipairs({ "api_key", "apiKey", "key" }) do
    if merged.model[secret] ~= nil then
      merged.model[secret] = nil
      table.insert(
        problems,
        "model." .. secret .. " is ignored: set AGENT_ASSIST_LLM_API_KEY in the environment instead"
      )
    end
  end
  options = merged
  if #problems > 0 then
    vim.notify("Agent Assist: " .. table.concat(problems, "\n"), vim.log.levels.WARN)
  end
  return options
end

--- The options in force (defaults until `setup` is called).
---@return agent_assist.Options
function M.get()
  return options
end

--- The default instance id for a project root: stable across restarts of Neovim.
---@param root string
---@return string
function M.default_instance_id(root)
  local name = vim.fs.basename(root):gsub("[^%w_.-]", "_"):sub(1, 32)
  return ("nvim-%s-%s"):format(name, vim.fn.sha256(root):sub(1, 12))
end

---@param root string
---@return string
function M.instance_id(root)
  return options.instance_id or M.default_instance_id(root)
end

--- The server command for a project: `cmd`, else the project's venv, else `agent-assist serve`.
---@param root? string
---@return string[]
function M.resolve_cmd(root)
  if options.cmd then
    return vim.deepcopy(options.cmd)
  end
  if root then
    for _, candidate in ipairs({ "/.venv/bin/agent-assist", "/.venv/Scripts/agent-assist.exe" }) do
      local path = root .. candidate
      if vim.fn.executable(path) == 1 then
        return { path, "serve" }
      end
    end
  end
  return { "agent-assist", "serve" }
end

--- The `initializationOptions` for a root. Nothing secret: the key stays in the environment.
---@param root string
---@return agent_assist.InitializationOptions
function M.init_options(root)
  local store = vim.trim(options.store or "")
  ---@type agent_assist.InitializationOptions
  local init = {
    instanceId = M.instance_id(root),
    autoResume = options.auto_resume,
    persistence = options.persistence,
    store = store ~= "" and store or nil, -- empty: the server's $AGENT_ASSIST_STORE, else local
    trackedFiles = options.tracked_files,
    contextWindow = options.context_window,
    compactAt = options.compact_at,
    mcpServers = options.mcp_servers and next(options.mcp_servers) and options.mcp_servers or nil,
    driftMessages = false, -- agentAssist/drift is shown instead of the server's repeat of it
  }
  ---@type agent_assist.ModelOptions
  local model = {}
  if options.model.name then
    model.name = options.model.name
  end
  if options.model.base_url then
    model.baseUrl = options.model.base_url
  end
  model.maxRetries = options.model.max_retries
  model.streamTimeout = options.model.stream_timeout
  model.firstTokenTimeout = options.model.first_token_timeout
  model.maxReplyBytes = options.model.max_reply_bytes
  model.maxOutputTokens = options.model.max_output_tokens
  if next(model) then
    init.model = model
  end
  local tools_opts = options.tools
  ---@type agent_assist.ToolsOptions
  local tools = {
    maxCallsPerResponse = tools_opts.max_calls_per_response,
    maxCallsPerTurn = tools_opts.max_calls_per_turn,
    maxArgumentBytes = tools_opts.max_argument_bytes,
  }
  -- empty: only the server's built-in protected paths
  if tools_opts.protected_paths and #tools_opts.protected_paths > 0 then
    tools.protectedPaths = vim.deepcopy(tools_opts.protected_paths)
  end
  if next(tools) then
    init.tools = tools
  end
  return init
end

return M
