-- agent_assist.client: One `agent-assist serve` per project root, started with vim.lsp.start.

local config = require("agent_assist.config")
local protocol = require("agent_assist.protocol")

local M = {}

M.NAME = "agent_assist"

--- Method names and error codes of the wire contract (generated: agent_assist.protocol).
M.methods = protocol.methods
M.errors = protocol.errors

---@class agent_assist.Project
---@field root string
---@field client_id integer
---@field initialized boolean
---@field exited boolean
---@field stopping boolean
---@field session_id? string
---@field queue fun(client: vim.lsp.Client)[]

---@type table<string, agent_assist.Project>
M.projects = {}

local has_011 = vim.fn.has("nvim-0.11") == 1

--- Call a client method the way this Neovim expects (0.11 methods, 0.10 functions).
local function call(client, name, ...)
  if has_011 then
    return client[name](client, ...)
  end
  return client[name](...)
end

---@param msg string
---@param level? integer
function M.notify(msg, level)
  vim.notify("Agent Assist: " .. msg, level or vim.log.levels.INFO, { title = "Agent Assist" })
end

local function realpath(path)
  return vim.uv.fs_realpath(path) or path
end

--- The project root for a buffer: nearest root marker, else the current directory.
---@param bufnr? integer
---@return string
function M.root(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local owner = vim.b[bufnr].agent_assist_root
  if owner then
    return owner
  end
  local found = vim.fs.root(bufnr, config.get().root_markers)
  return realpath(found or vim.uv.cwd())
end

-- -- handlers (this client only) ----------------------------------------------------------

--- `window/showMessageRequest` through vim.ui.select (any picker plugin).
local function show_message_request(_, params)
  local co, is_main = coroutine.running()
  local actions = params.actions or {}
  local prompt = (params.message or ""):gsub("\n", " ")
  if not co or is_main then
    return vim.NIL -- cannot wait here: the server takes the default
  end
  vim.ui.select(actions, {
    prompt = "Agent Assist: " .. prompt,
    kind = "agent_assist",
    format_item = function(action)
      return action.title
    end,
  }, function(choice)
    vim.schedule(function()
      coroutine.resume(co, choice or vim.NIL)
    end)
  end)
  return coroutine.yield()
end

local MESSAGE_LEVELS = {
  [1] = vim.log.levels.ERROR,
  [2] = vim.log.levels.WARN,
  [3] = vim.log.levels.INFO,
  [4] = vim.log.levels.DEBUG,
}

local function project_of(ctx)
  for _, project in pairs(M.projects) do
    if project.client_id == ctx.client_id then
      return project
    end
  end
end

local function show_message(_, params)
  M.notify(params.message or "", MESSAGE_LEVELS[params.type] or vim.log.levels.INFO)
  return vim.NIL
end

--- Format a drift report as the list of files and what happened to them.
---@param params agent_assist.DriftParams
---@return string
function M.describe_drift(params)
  local lines = {}
  local after_edit = {}
  for _, path in ipairs(params.afterAssistantEdit or {}) do
    after_edit[path] = true
  end
  for _, kind in ipairs({ "modified", "deleted", "created" }) do
    for _, path in ipairs(params[kind] or {}) do
      local what = kind
      if kind == "modified" and after_edit[path] then
        what = "changed after the assistant's edit"
      end
      table.insert(lines, ("  %s (%s)"):format(path, what))
    end
  end
  local head = params.source == "resume" and "files changed since the last session:"
    or "files changed outside the assistant:"
  return head .. "\n" .. table.concat(lines, "\n")
end

local function on_drift(_, params)
  M.notify(M.describe_drift(params), vim.log.levels.WARN)
end

local function on_session_changed(_, params, ctx)
  local project = project_of(ctx)
  if project then
    project.session_id = params.sessionId
    require("agent_assist.chat").on_session_changed(project.root, params)
  end
end

local function on_delta(_, params, ctx)
  local project = project_of(ctx)
  if project then
    require("agent_assist.chat").on_delta(project.root, params)
  end
end

local function on_retry(_, params, ctx)
  local project = project_of(ctx)
  if project then
    require("agent_assist.chat").on_retry(project.root, params)
  end
end

local function on_tool_call(_, params, ctx)
  local project = project_of(ctx)
  if project then
    require("agent_assist.chat").on_tool_call(project.root, params)
  end
end

local function on_turn_started(_, params, ctx)
  local project = project_of(ctx)
  if project then
    require("agent_assist.chat").on_turn_started(project.root, params)
  end
end

local function handlers()
  return {
    ["window/showMessageRequest"] = show_message_request,
    ["window/showMessage"] = show_message,
    [M.methods.drift] = on_drift,
    [M.methods.session_changed] = on_session_changed,
    [M.methods.chat_delta] = on_delta,
    [M.methods.chat_retry] = on_retry,
    [M.methods.tool_call] = on_tool_call,
    [M.methods.turn_started] = on_turn_started,
    -- workspace/applyEdit: Neovim's built-in handler (edits land in buffers, undoable).
  }
end

-- -- lifetime -------------------------------------------------------------------------

local group = vim.api.nvim_create_augroup("agent_assist", { clear = true })

local function attach_buffer(project, bufnr)
  if not project.client_id or project.exited or not vim.api.nvim_buf_is_loaded(bufnr) then
    return
  end
  if vim.bo[bufnr].buftype ~= "" then
    return
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" or name:sub(1, #project.root + 1) ~= project.root .. "/" then
    return
  end
  vim.lsp.buf_attach_client(bufnr, project.client_id)
end

--- Keep the server's view of open project files current, so whole-file edits fit.
vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
  group = group,
  callback = function(args)
    for _, project in pairs(M.projects) do
      attach_buffer(project, args.buf)
    end
  end,
})

--- Stop every server and wait (up to `stop_timeout`) for them to exit, so they autosave.
---@param timeout? integer
function M.stop_all(timeout)
  local waiting = {}
  for _, project in pairs(M.projects) do
    local client = vim.lsp.get_client_by_id(project.client_id)
    if client and not project.exited then
      project.stopping = true
      call(client, "stop")
      table.insert(waiting, project)
    end
  end
  vim.wait(timeout or config.get().stop_timeout, function()
    for _, project in ipairs(waiting) do
      if not project.exited then
        return false
      end
    end
    return true
  end, 20)
end

vim.api.nvim_create_autocmd("VimLeavePre", {
  group = group,
  callback = function()
    M.stop_all()
  end,
})

--- The running project for a root, if any.
---@param root? string
---@return agent_assist.Project?
function M.get(root)
  local project = M.projects[root or M.root()]
  if project and not project.exited then
    return project
  end
end

--- Start (once per root) the server for `root`.
---@param root? string
---@return agent_assist.Project?
function M.ensure(root)
  root = root or M.root()
  local running = M.get(root)
  if running then
    return running
  end
  local cmd = config.resolve_cmd(root)
  if vim.fn.executable(cmd[1]) ~= 1 then
    M.notify(
      ("server not found: %q. Install it from the agent-assist repository (:h agent_assist-install) or set `cmd` in setup()."):format(
        cmd[1]
      ),
      vim.log.levels.ERROR
    )
    return nil
  end
  ---@type agent_assist.Project
  local project = {
    root = root,
    client_id = 0,
    initialized = false,
    exited = false,
    stopping = false,
    queue = {},
  }
  local lsp_config = {
    name = M.NAME,
    cmd = cmd,
    cmd_cwd = root,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fs.basename(root) } },
    init_options = config.init_options(root),
    handlers = handlers(),
    on_init = function(client)
      project.initialized = true
      local queue = project.queue
      project.queue = {}
      for _, fn in ipairs(queue) do
        fn(client)
      end
    end,
    on_exit = function(code, signal)
      project.exited = true
      vim.schedule(function()
        require("agent_assist.chat").on_exit(root)
        if not project.stopping and code ~= 0 and vim.v.exiting == vim.NIL then
          M.notify(
            ("the server exited (code %s, signal %s); see :LspLog"):format(code, signal),
            vim.log.levels.ERROR
          )
        end
      end)
    end,
  }
  local id
  if has_011 then
    id = vim.lsp.start(lsp_config, {
      attach = false,
      reuse_client = function()
        return false -- one per root is tracked here; a stopping client must not be reused
      end,
    })
  else
    id = vim.lsp.start_client(lsp_config)
  end
  if not id then
    M.notify("could not start " .. table.concat(cmd, " "), vim.log.levels.ERROR)
    return nil
  end
  project.client_id = id
  M.projects[root] = project
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    attach_buffer(project, bufnr)
  end
  return project
end

--- Run `fn(client)` once the server for `root` is initialized (starting it if needed).
---@param root? string
---@param fn fun(client: vim.lsp.Client)
---@return boolean started false if the server could not be started
function M.with_client(root, fn)
  local project = M.ensure(root)
  if not project then
    return false
  end
  local client = vim.lsp.get_client_by_id(project.client_id)
  if project.initialized and client then
    fn(client)
  else
    table.insert(project.queue, fn)
  end
  return true
end

---@alias agent_assist.Callback fun(err: lsp.ResponseError?, result: any)

--- Send a custom request; `callback(err, result)` runs on the main loop.
--- `on_sent(request_id)` receives the id to cancel it with.
---@param root? string
---@param method string
---@param params table
---@param callback agent_assist.Callback
---@param on_sent? fun(client_id: integer, request_id: integer)
function M.request(root, method, params, callback, on_sent)
  local started = M.with_client(root, function(client)
    local ok, request_id = call(client, "request", method, params, function(err, result)
      callback(err, result)
    end)
    if not ok then
      callback({ code = -32099, message = "the server is not running" }, nil)
    elseif on_sent then
      on_sent(client.id, request_id)
    end
  end)
  if not started then
    callback({ code = -32099, message = "the server could not be started" }, nil)
  end
end

--- Ask the running server synchronously (for completion); nil if it is not running.
---@param root? string
---@param method string
---@param params table
---@param timeout_ms? integer
---@return any
function M.request_sync(root, method, params, timeout_ms)
  local project = M.get(root)
  if not project or not project.initialized then
    return nil
  end
  local client = vim.lsp.get_client_by_id(project.client_id)
  if not client then
    return nil
  end
  local response = call(client, "request_sync", method, params, timeout_ms or 1000)
  if response and response.result ~= nil then
    return response.result
  end
end

--- Cancel a request (`$/cancelRequest`).
---@param client_id integer
---@param request_id integer
function M.cancel(client_id, request_id)
  local client = vim.lsp.get_client_by_id(client_id)
  if client then
    call(client, "cancel_request", request_id)
  end
end

return M
