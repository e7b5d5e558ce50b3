-- agent_assist: Agent Assist for Neovim: a chat with an assistant whose sessions persist.

local M = {}

--- Configure the plugin; `opts` is deep-merged over the defaults (see :h agent_assist-config).
---@param opts? agent_assist.Options
---@return agent_assist.Options
function M.setup(opts)
  return require("agent_assist.config").setup(opts)
end

--- Start the server for the current project (it also starts with the first command).
---@return boolean started
function M.start()
  return require("agent_assist.client").ensure() ~= nil
end

--- Open the chat window; with `text`, send it at once.
---@param text? string
function M.chat(text)
  if text and text ~= "" then
    require("agent_assist.chat").send(text)
  else
    require("agent_assist.chat").open()
  end
end

--- Cancel the running turn of the current project.
---@return boolean cancelled
function M.cancel()
  return require("agent_assist.chat").cancel()
end

--- Take back the messages waiting behind the running turn (their text goes to register ").
---@return string[] withdrawn
function M.withdraw()
  return require("agent_assist.chat").withdraw()
end

--- Run a subcommand, as `:AgentAssist {name} {args}` does.
---@param name string
---@param args? string[]
function M.command(name, args)
  local fargs = { name }
  vim.list_extend(fargs, args or {})
  require("agent_assist.commands").run(fargs)
end

--- Send a custom request to the current project's server (see docs/protocol.md).
---@param method string e.g. "agentAssist/status"
---@param params? table
---@param callback fun(err: lsp.ResponseError?, result: any)
function M.request(method, params, callback)
  local client = require("agent_assist.client")
  client.request(client.root(), method, params or {}, callback)
end

--- Stop the servers (they autosave) and wait up to `timeout` ms for them to exit.
---@param timeout? integer
function M.stop(timeout)
  require("agent_assist.client").stop_all(timeout)
end

return M
