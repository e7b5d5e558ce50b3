-- agent_assist.health: `:checkhealth agent_assist`

local M = {}

--- A connection string with its password (URI `user:password@` or `password=…`) hidden.
---@param dsn string
---@return string
function M.without_password(dsn)
  local hidden = dsn:gsub("(//[^:/@]*):[^@/]*@", "%1:***@"):gsub("(password%s*=%s*)%S+", "%1***")
  return hidden
end

--- The storage directory the server uses (session/paths.py `storage_root`).
---@return string
function M.storage_dir()
  local env = vim.env.AGENT_ASSIST_HOME
  if env and env ~= "" then
    return vim.fs.normalize(env)
  end
  local sysname = vim.uv.os_uname().sysname
  if sysname == "Darwin" then
    return vim.fs.normalize("~/Library/Application Support/agent_assist")
  elseif sysname == "Windows_NT" then
    return vim.fs.normalize(
      (vim.env.LOCALAPPDATA or "~/AppData/Local") .. "/agent_assist/agent_assist"
    )
  end
  local config_home = vim.env.XDG_CONFIG_HOME
  if not config_home or config_home == "" then
    config_home = "~/.config"
  end
  return vim.fs.normalize(config_home .. "/agent_assist")
end

--- The nearest existing directory at or above `path`.
local function existing_ancestor(path)
  local dir = path
  while dir and vim.fn.isdirectory(dir) == 0 do
    local parent = vim.fs.dirname(dir)
    if parent == dir then
      return nil
    end
    dir = parent
  end
  return dir
end

local function first_env(names)
  for _, name in ipairs(names) do
    local value = vim.env[name]
    if value and value ~= "" then
      return value, name
    end
  end
end

--- `cmd` with its `serve` part replaced by `--version`.
local function version_cmd(cmd)
  local out = {}
  for _, part in ipairs(cmd) do
    if part == "serve" then
      table.insert(out, "--version")
      return out
    end
    table.insert(out, part)
  end
end

function M.check()
  local health = vim.health
  local config = require("agent_assist.config")
  local client = require("agent_assist.client")
  local opts = config.get()

  health.start("Neovim")
  local version = tostring(vim.version())
  if vim.fn.has("nvim-0.10") == 1 then
    health.ok("Neovim " .. version)
  else
    health.error("Neovim " .. version .. ": agent_assist needs 0.10 or newer")
  end

  health.start("Server")
  local root = client.root()
  health.info("project root: " .. root)
  health.info("instance id: " .. config.instance_id(root))
  local cmd = config.resolve_cmd(root)
  if vim.fn.executable(cmd[1]) ~= 1 then
    health.error("server not found: " .. cmd[1], {
      "install it from a clone of the agent-assist repository: :h agent_assist-install",
      "or set `cmd` in require('agent_assist').setup({ cmd = { ... } })",
    })
  else
    local probe = version_cmd(cmd)
    if probe then
      local ok, result = pcall(function()
        return vim.system(probe, { text = true }):wait(15000)
      end)
      if ok and result.code == 0 then
        health.ok(("server: %s (%s)"):format(table.concat(cmd, " "), vim.trim(result.stdout or "")))
      else
        local detail = ok and vim.trim((result.stderr or "") .. (result.stdout or ""))
          or tostring(result)
        health.error(("`%s` failed: %s"):format(table.concat(probe, " "), detail))
      end
    else
      health.ok("server: " .. table.concat(cmd, " ") .. " (version unknown: no `serve` in cmd)")
    end
  end
  local project = client.get(root)
  if project then
    local lsp_client = vim.lsp.get_client_by_id(project.client_id)
    local info = lsp_client and lsp_client.server_info
    health.ok(
      ("running (client %d, %s %s), session %s"):format(
        project.client_id,
        info and info.name or "?",
        info and info.version or "?",
        project.session_id or "not settled yet"
      )
    )
  else
    health.info("not running for this project (it starts with the first :AgentAssist command)")
  end

  health.start("Model")
  local name, name_from = opts.model.name, "setup()"
  if not name then
    name, name_from = first_env({ "AGENT_ASSIST_LLM_MODEL_NAME", "AGENT_ASSIST_MODEL" })
  end
  local base_url, url_from = opts.model.base_url, "setup()"
  if not base_url then
    base_url, url_from = first_env({ "AGENT_ASSIST_LLM_BASE_URL", "OPENAI_BASE_URL" })
  end
  local _, key_from = first_env({ "AGENT_ASSIST_LLM_API_KEY", "OPENAI_API_KEY" })
  if name then
    health.ok(("model %s (from %s)"):format(name, name_from))
  else
    health.warn("no model configured: chat will fail", {
      "export AGENT_ASSIST_LLM_MODEL_NAME (and AGENT_ASSIST_LLM_BASE_URL, AGENT_ASSIST_LLM_API_KEY)",
      "or set model = { name = ..., base_url = ... } in setup(); the key stays in the environment",
    })
  end
  if base_url then
    health.ok(("base URL %s (from %s)"):format(base_url, url_from))
  else
    health.info("no base URL: the OpenAI default is used")
  end
  if key_from then
    health.ok("API key: set (from $" .. key_from .. ", not shown)")
  else
    health.info("API key: not set (fine for a local model that needs none)")
  end
  local function model_option(value, env_name, default)
    if value ~= nil then
      return ("%s (from setup())"):format(value)
    end
    local from_env = first_env({ env_name })
    return from_env and ("%s (from $%s)"):format(from_env, env_name)
      or ("%s (default)"):format(default)
  end
  health.info(
    ("retries: %s; stream timeout: %s s"):format(
      model_option(opts.model.max_retries, "AGENT_ASSIST_LLM_MAX_RETRIES", 2),
      model_option(opts.model.stream_timeout, "AGENT_ASSIST_LLM_STREAM_TIMEOUT", 60)
    )
  )

  health.start("Storage")
  local store = vim.trim(opts.store or vim.env.AGENT_ASSIST_STORE or "")
  if store ~= "" and store ~= "local" then
    health.info(
      ("sessions are kept in PostgreSQL: %s; the storage directory holds only the offline spool"):format(
        M.without_password(store)
      ),
      { "run `agent-assist doctor --store <connection string>` to check the database" }
    )
  end
  local dir = M.storage_dir()
  local existing = existing_ancestor(dir)
  if existing and vim.fn.filewritable(existing) == 2 then
    health.ok(("storage directory %s is writable"):format(dir))
  else
    health.error(("storage directory %s is not writable"):format(dir), {
      "set AGENT_ASSIST_HOME to a writable directory",
    })
  end
end

return M
