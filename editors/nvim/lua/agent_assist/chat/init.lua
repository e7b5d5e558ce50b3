-- agent_assist.chat: The chat buffer: transcript, streaming replies, tool lines, prompt.
-- Composed of one module per job (buffer, render, header, window, turns, stream); this one
-- creates a chat, redraws it, follows the session, and is what the rest of the plugin calls.

local buffer = require("agent_assist.chat.buffer")
local chat_header = require("agent_assist.chat.header")
local client = require("agent_assist.client")
local render = require("agent_assist.chat.render")
local stream = require("agent_assist.chat.stream")
local turns = require("agent_assist.chat.turns")
local window = require("agent_assist.chat.window")

local valid, windows_of, set_transcript = buffer.valid, buffer.windows_of, buffer.set_transcript

local M = {}

---@type table<string, agent_assist.Chat>
M.chats = buffer.chats

pcall(vim.treesitter.language.register, "markdown", "agent_assist")

M.tool_line = render.tool_line
M.end_mark = render.end_mark
M.retry_line = render.retry_line
M.render = render.render
M.show_header = chat_header.show_header
M.dismiss = chat_header.dismiss
M.foldexpr = chat_header.foldexpr
M.send = turns.send
M.prompt = turns.prompt
M.cancel = turns.cancel
M.withdraw = turns.withdraw
M.on_exit = turns.on_exit
M.on_turn_started = turns.on_turn_started
M.on_delta = stream.on_delta
M.on_retry = stream.on_retry
M.on_tool_call = stream.on_tool_call

--- Show the transcript of the current session, unless something was written meanwhile.
local function fill_from_history(chat)
  local version = chat.version
  client.request(chat.root, client.methods.history, {}, function(err, result)
    if err or not valid(chat) or chat.version ~= version or chat.pending then
      return
    end
    M.redraw(chat.root, result.items or {})
  end)
end

--- The chat of a project root, creating its buffer (not a window) if needed.
---@param root string
---@return agent_assist.Chat
function M.buffer(root)
  local chat = M.chats[root]
  if valid(chat) then
    return chat
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, "agent-assist://" .. root)
  vim.b[buf].agent_assist_root = root
  vim.bo[buf].filetype = "agent_assist"
  vim.bo[buf].modifiable = false
  if not pcall(vim.treesitter.start, buf, "markdown") then
    vim.bo[buf].syntax = "markdown"
  end
  chat = {
    root = root,
    buf = buf,
    queue = {},
    version = 0,
    tools = {},
    header_size = 0,
    header_ticket = 0,
    header_dismissed = false,
  }
  M.chats[root] = chat
  window.attach(chat)
  fill_from_history(chat)
  chat_header.refresh_header(chat)
  return chat
end

--- Open (or focus) the chat window of a root.
---@param root? string
---@return agent_assist.Chat
function M.open(root)
  root = root or client.root()
  local chat = M.buffer(root)
  window.show(chat)
  return chat
end

--- Redraw the chat from transcript items (or fetch them with `agentAssist/history`).
---@param root? string
---@param items? agent_assist.TranscriptItem[]
---@param on_done? fun() called once the transcript is shown
function M.redraw(root, items, on_done)
  root = root or client.root()
  local chat = M.buffer(root)
  if items then
    chat.tools = {}
    set_transcript(chat, M.render(items))
    if on_done then
      on_done()
    end
    return
  end
  if chat.pending then
    client.notify("a turn is running: redraw when it ends (or cancel it)", vim.log.levels.WARN)
    return
  end
  client.request(root, client.methods.history, {}, function(err, result)
    if err then
      client.notify(err.message, vim.log.levels.ERROR)
    elseif valid(chat) and not chat.pending then
      M.redraw(root, result.items or {}, on_done)
    end
  end)
end

--- `agentAssist/sessionChanged`: clear on reset, redraw on resume/open/fork/restore; the
--- session header follows the session (`agentAssist/resume`).
---@param root string
---@param params agent_assist.SessionChangedParams
function M.on_session_changed(root, params)
  local chat = M.chats[root]
  if not valid(chat) then
    return
  end
  if params.reason ~= "restored" then
    chat.header_dismissed = false -- another session: its own header
  end
  if params.reason == "new" or params.reason == "reset" then
    chat_header.set_header(chat, nil)
  end
  chat_header.refresh_header(chat)
  if chat.pending then
    return
  end
  if params.reason == "new" or params.reason == "reset" then
    set_transcript(chat, {})
  else
    M.redraw(root)
  end
end

--- Put the cursor on the user header of a turn.
---@param root string
---@param turn integer
function M.goto_turn(root, turn)
  local chat = M.chats[root]
  if not valid(chat) then
    return
  end
  local wanted = ("%s (turn %d)"):format(buffer.USER_HEADER, turn)
  for i, line in ipairs(vim.api.nvim_buf_get_lines(chat.buf, 0, -1, false)) do
    if line == wanted then
      for _, win in ipairs(windows_of(chat.buf)) do
        vim.api.nvim_win_set_cursor(win, { i, 0 })
      end
      return
    end
  end
end

return M
