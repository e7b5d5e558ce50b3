-- agent_assist.chat.turns: A chat's turns: sending a message (the server queues it while a
-- turn runs), its start, its result, cancelling, withdrawing the waiting messages, the server
-- exiting.

local buffer = require("agent_assist.chat.buffer")
local client = require("agent_assist.client")

local chats = buffer.chats
local split_lines, valid, set_lines, append, append_text =
  buffer.split_lines, buffer.valid, buffer.set_lines, buffer.append, buffer.append_text
local USER_HEADER, ASSISTANT_HEADER = buffer.USER_HEADER, buffer.ASSISTANT_HEADER

local M = {}

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

--- Show a turn's message and make it the running turn (its request is already sent).
---@param chat agent_assist.Chat
---@param turn agent_assist.Turn
local function show(chat, turn)
  local lines = { USER_HEADER }
  vim.list_extend(lines, split_lines(turn.text))
  vim.list_extend(lines, { "", ASSISTANT_HEADER, "" })
  append(chat, lines)
  local count = vim.api.nvim_buf_line_count(chat.buf)
  turn.header_line = count - #lines
  turn.reply_line = count - 1
  chat.pending = turn
  chat.tools = {}
  local number, early = turn.turn, turn.early
  turn.turn, turn.early = nil, {}
  M.number_turn(chat, turn, number)
  for _, replay in ipairs(early) do -- what it streamed before the turn ahead of it answered
    replay()
  end
end

--- The next waiting message becomes the running turn, if one waits.
local function next_in_queue(chat)
  local turn = table.remove(chat.queue, 1)
  if turn then
    show(chat, turn)
  end
end

local function finish(chat, turn, err, result)
  if not valid(chat) then
    return
  end
  if chat.pending ~= turn then
    -- a waiting message that failed before its turn began; else cancelled, withdrawn, or the
    -- transcript was redrawn meanwhile
    for i, waiting in ipairs(chat.queue) do
      if waiting == turn then
        table.remove(chat.queue, i)
        if err then
          client.notify(err.message or "request failed", vim.log.levels.ERROR)
        end
      end
    end
    return
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

--- Send a message now: the server runs the turns one at a time, in the order sent.
---@param chat agent_assist.Chat
---@param text string
---@return agent_assist.Turn
local function request(chat, text)
  ---@type agent_assist.Turn
  local turn = {
    text = text,
    header_line = 0,
    reply_line = 0,
    got_delta = false,
    cancelled = false,
    early = {},
  }
  client.request(chat.root, client.methods.chat, { text = text }, function(err, result)
    finish(chat, turn, err, result)
  end, function(client_id, request_id)
    turn.client_id, turn.request_id = client_id, request_id
    if turn.cancelled then
      client.cancel(client_id, request_id)
    end
  end)
  return turn
end

--- Send a message (opening the chat window if needed). While a turn runs it waits in the
--- server's queue, shown once its turn starts.
---@param text string
---@param root? string
function M.send(text, root)
  local chat = require("agent_assist.chat").open(root)
  local turn = request(chat, text)
  if chat.pending then
    table.insert(chat.queue, turn)
    client.notify("message queued until the running turn ends")
    return
  end
  show(chat, turn)
end

--- `agentAssist/turnStarted`: number the running turn; a waiting message whose turn began
--- before the answer to the one ahead of it arrived keeps what it streams until then.
---@param root string
---@param params agent_assist.TurnStartedParams
function M.on_turn_started(root, params)
  local chat = chats[root]
  local turn = chat and chat.pending
  if not valid(chat) or not turn or turn.cancelled then
    return
  end
  if not turn.turn and params.text == turn.text then
    M.number_turn(chat, turn, params.turn)
    return
  end
  local head = chat.queue[1]
  if turn.turn ~= params.turn and head and not head.turn and params.text == head.text then
    head.turn = params.turn
  end
end

--- Hold a notification for the waiting message whose turn has begun (false: none has).
---@param chat agent_assist.Chat
---@param number integer
---@param replay fun()
---@return boolean held
function M.hold(chat, number, replay)
  local head = chat.queue[1]
  if head and head.turn ~= nil and head.turn == number then
    table.insert(head.early, replay)
    return true
  end
  return false
end

local function texts(waiting)
  return vim.tbl_map(function(turn)
    return turn.text
  end, waiting)
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

--- Take back the messages waiting behind the running turn: cancelled in the server's queue,
--- none runs, and their text goes to the unnamed register (`p` pastes it), so nothing typed
--- is lost.
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
  for _, turn in ipairs(waiting) do -- cancelled while they wait: the server never runs them
    turn.cancelled = true
    if turn.request_id then
      client.cancel(turn.client_id, turn.request_id)
    end
  end
  waiting = texts(waiting)
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
  if chat and #chat.queue > 0 then -- never run: kept for the user, as `withdraw` does
    local waiting = texts(chat.queue)
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
