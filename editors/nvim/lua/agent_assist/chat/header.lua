-- agent_assist.chat.header: The session header at the top of the chat buffer: shown, refreshed,
-- dismissed, folded; the lines below it move with it.

local buffer = require("agent_assist.chat.buffer")
local client = require("agent_assist.client")
local header_mod = require("agent_assist.header")

local chats = buffer.chats
local valid, write, transcript_empty = buffer.valid, buffer.write, buffer.transcript_empty

local M = {}

--- Put `header` (nil: none) at the top of the chat. The transcript, the cursor and the lines
--- a running turn writes to move with it.
---@param chat agent_assist.Chat
---@param header? agent_assist.Header
function M.set_header(chat, header)
  if header and chat.header and vim.deep_equal(header.lines, chat.header.lines) then
    chat.header = header -- the same text: a fold the user closed stays closed
    header_mod.highlight(chat.buf, header)
    return
  end
  local lines = header and header.lines or {}
  local old_size, empty = chat.header_size, transcript_empty(chat)
  local delta = #lines - old_size
  -- set first: the fold levels of the new lines are computed as they are written
  chat.header = header
  chat.header_size = #lines
  if empty then
    write(chat, 0, -1, #lines > 0 and lines or { "" })
  else
    write(chat, 0, old_size, lines, delta)
  end
  header_mod.highlight(chat.buf, header)
  local turn = chat.pending
  if delta ~= 0 and turn then
    turn.header_line = turn.header_line + delta
    turn.reply_line = turn.reply_line + delta
    turn.retry_line = turn.retry_line and turn.retry_line + delta
  end
  for key, line in pairs(chat.tools) do
    chat.tools[key] = line + delta
  end
end

--- Show the header of an `agentAssist/resume` result (none for a fresh session), unless it
--- was dismissed; `force` shows it even then.
---@param root string
---@param result agent_assist.ResumeResult
---@param force? boolean
function M.show_header(root, result, force)
  local chat = chats[root]
  if not valid(chat) then
    return
  end
  if force then
    chat.header_dismissed = false
  end
  if not chat.header_dismissed then
    M.set_header(chat, header_mod.build(result))
  end
end

--- Ask `agentAssist/resume` and show its header; only the newest answer is used.
function M.refresh_header(chat)
  chat.header_ticket = chat.header_ticket + 1
  local ticket = chat.header_ticket
  client.request(chat.root, client.methods.resume, {}, function(err, result)
    if not err and valid(chat) and chat.header_ticket == ticket then
      M.show_header(chat.root, result)
    end
  end)
end

--- Remove the session header; it comes back with the next session (or `:AgentAssist resume`).
---@param root? string
---@return boolean dismissed false if no header was shown
function M.dismiss(root)
  local chat = chats[root or client.root()]
  if not valid(chat) or not chat.header then
    client.notify("no session header to dismiss")
    return false
  end
  chat.header_dismissed = true
  chat.header_ticket = chat.header_ticket + 1 -- an answer on its way would bring it back
  M.set_header(chat, nil)
  return true
end

--- 'foldexpr' of chat windows: "What I remember" is a fold.
---@return string
function M.foldexpr()
  local buf = vim.api.nvim_get_current_buf()
  local chat = chats[vim.b[buf].agent_assist_root or ""]
  local memory = valid(chat) and chat.buf == buf and chat.header and chat.header.memory
  if not memory then
    return "0"
  end
  local line = vim.v.lnum - 1
  if line == memory.first then
    return ">1"
  end
  return (line > memory.first and line <= memory.last) and "1" or "0"
end

--- The changed file named on the cursor's line of the header, if any.
---@param chat agent_assist.Chat
---@return agent_assist.ChangedFile?
function M.file_at_cursor(chat)
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  return chat.header and row < chat.header_size and chat.header.files[row] or nil
end

--- The key's own meaning, for a header key used elsewhere in the buffer.
function M.feed_default(lhs)
  local count = vim.v.count > 0 and tostring(vim.v.count) or ""
  vim.api.nvim_feedkeys(vim.keycode(count .. lhs), "n", false)
end

return M
