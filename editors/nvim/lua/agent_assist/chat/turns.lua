-- agent_assist.chat.turns: A chat's turns: sending a message (queued while a turn runs), its
-- result, cancelling, withdrawing the waiting messages, the server exiting.

local buffer = require("agent_assist.chat.buffer")
local client = require("agent_assist.client")

local chats = buffer.chats
local split_lines, valid, set_lines, append, append_text =
  buffer.split_lines, buffer.valid, buffer.set_lines, buffer.append, buffer.append_text
local USER_HEADER, ASSISTANT_HEADER = buffer.USER_HEADER, buffer.ASSISTANT_HEADER

local M = {}

local start_turn

local function next_in_queue(chat)
  local text = table.remove(chat.queue, 1)
  if text then
    start_turn(chat, text)
  end
end

--- Put the server's turn number on the user header once it is known.
function M.number_turn(chat, turn, number)
  if turn.turn or type(number) ~= "number" then
    return
  end
  turn.turn = number
  local line = turn.header_line
  local current = vim.api.nvim_buf_get_lines(chat.buf, line, line + 1, false)[1]
  if current == USER_HEADER then
    set_lines(chat, line, line + 1, { ("%s (turn %d)"):format(USER_HEADER, number) })
  end
end

local function finish(chat, turn, err, result)
  if chat.pending ~= turn or not valid(chat) then
    return -- cancelled, or the transcript was redrawn meanwhile
  end
  chat.pending = nil
  if err then
    append(chat, { "", "> **Error:** " .. split_lines(err.message or "request failed")[1], "" })
    client.notify(err.message or "request failed", vim.log.levels.ERROR)
  else
    M.number_turn(chat, turn, result.turn)
    if not turn.got_delta and result.text then
      append_text(chat, result.text)
    end
    append(chat, { "" })
  end
  next_in_queue(chat)
end

start_turn = function(chat, text)
  local lines = { USER_HEADER }
  vim.list_extend(lines, split_lines(text))
  vim.list_extend(lines, { "", ASSISTANT_HEADER, "" })
  append(chat, lines)
  local count = vim.api.nvim_buf_line_count(chat.buf)
  ---@type agent_assist.Turn
  local turn = {
    text = text,
    header_line = count - #lines,
    reply_line = count - 1,
    got_delta = false,
    cancelled = false,
  }
  chat.pending = turn
  chat.tools = {}
  client.request(chat.root, client.methods.chat, { text = text }, function(err, result)
    finish(chat, turn, err, result)
  end, function(client_id, request_id)
    turn.client_id, turn.request_id = client_id, request_id
    if turn.cancelled then
      client.cancel(client_id, request_id)
    end
  end)
end

--- Send a message (opening the chat window if needed). Queued if a turn is running.
---@param text string
---@param root? string
function M.send(text, root)
  local chat = require("agent_assist.chat").open(root)
  if chat.pending then
    table.insert(chat.queue, text)
    client.notify("message queued until the running turn ends")
    return
  end
  start_turn(chat, text)
end

--- Ask for a message with vim.ui.input and send it.
---@param root? string
function M.prompt(root)
  root = root or client.root()
  vim.ui.input({ prompt = "Agent Assist> " }, function(text)
    if text and vim.trim(text) ~= "" then
      M.send(text, root)
    end
  end)
end

--- Cancel the running turn (`$/cancelRequest`); the server records it as aborted. Messages
--- waiting behind it then run, as they would after any turn (`withdraw` takes them back).
---@param root? string
---@return boolean cancelled
function M.cancel(root)
  local chat = chats[root or client.root()]
  local turn = chat and chat.pending
  if not turn then
    client.notify("no turn is running")
    return false
  end
  turn.cancelled = true
  if turn.request_id then
    client.cancel(turn.client_id, turn.request_id)
  end
  chat.pending = nil
  append(chat, { "", "_(cancelled)_", "" })
  if #chat.queue > 0 then
    client.notify(
      ("%d waiting message(s) go on (:AgentAssist withdraw takes them back)"):format(#chat.queue)
    )
  end
  next_in_queue(chat)
  return true
end

--- Take back the messages waiting behind the running turn: none is sent, and their text goes
--- to the unnamed register (`p` pastes it), so nothing typed is lost.
---@param root? string
---@return string[] withdrawn
function M.withdraw(root)
  local chat = chats[root or client.root()]
  local waiting = chat and chat.queue or {}
  if #waiting == 0 then
    client.notify("no message is waiting")
    return {}
  end
  chat.queue = {}
  vim.fn.setreg('"', table.concat(waiting, "\n\n"))
  client.notify(
    ('withdrew %d waiting message(s); their text is in register ", p pastes it'):format(#waiting)
  )
  return waiting
end

--- The server exited: a running turn will not answer.
---@param root string
function M.on_exit(root)
  local chat = chats[root]
  if valid(chat) and chat.pending then
    chat.pending = nil
    append(chat, { "", "_(the server exited)_", "" })
  end
  if chat and #chat.queue > 0 then -- never sent: kept for the user, as `withdraw` does
    local waiting = chat.queue
    chat.queue = {}
    vim.fn.setreg('"', table.concat(waiting, "\n\n"))
    client.notify(
      ('the server exited: %d waiting message(s) were not sent; their text is in register "'):format(
        #waiting
      ),
      vim.log.levels.WARN
    )
  end
end

return M
