-- agent_assist.chat.stream: What the server streams into the running turn: deltas, retries,
-- tool calls.

local buffer = require("agent_assist.chat.buffer")
local render = require("agent_assist.chat.render")
local turns = require("agent_assist.chat.turns")

local chats = buffer.chats
local valid, set_lines, append, append_text, last_line =
  buffer.valid, buffer.set_lines, buffer.append, buffer.append_text, buffer.last_line

local M = {}

--- The chat and its running turn a streaming notification is for (nil if none).
---@param root string
---@param params { turn: integer }
---@param again fun(root: string, params: table) replays it once a waiting turn that began is shown
---@return table|nil chat
---@return table|nil turn
local function streaming_turn(root, params, again)
  local chat = chats[root]
  local turn = chat and chat.pending
  if not valid(chat) or not turn or turn.cancelled then
    return nil, nil
  end
  if turn.turn and params.turn ~= turn.turn then
    turns.hold(chat, params.turn, function()
      again(root, params)
    end)
    return nil, nil
  end
  turns.number_turn(chat, turn, params.turn)
  return chat, turn
end

--- `agentAssist/chatDelta`: stream into the running turn.
---@param root string
---@param params agent_assist.ChatDeltaParams
function M.on_delta(root, params)
  local chat, turn = streaming_turn(root, params, M.on_delta)
  if not chat or not turn then
    return
  end
  turn.got_delta = true
  append_text(chat, params.delta or "")
end

--- `agentAssist/chatRetry`: drop the text the failed attempt streamed, note the retry; the
--- next deltas start the answer over below the note. An earlier note of the same request is
--- replaced, so retries stay one line.
---@param root string
---@param params agent_assist.ChatRetryParams
function M.on_retry(root, params)
  local chat, turn = streaming_turn(root, params, M.on_retry)
  if not chat or not turn then
    return
  end
  local start = turn.reply_line
  if turn.retry_line and turn.retry_line == start - 2 then
    start = turn.retry_line
  end
  set_lines(chat, start, -1, { render.retry_line(params), "", "" })
  turn.retry_line = start
  turn.reply_line = start + 2
  turn.got_delta = false -- no delta after this: the result's text is the answer
end

--- `agentAssist/toolCall`: one activity line per call, updated when it ends.
---@param root string
---@param params agent_assist.ToolCallParams
function M.on_tool_call(root, params)
  local chat = chats[root]
  if not valid(chat) or not chat.pending or chat.pending.cancelled then
    return
  end
  local running = chat.pending.turn
  if
    running
    and params.turn ~= running
    and turns.hold(chat, params.turn, function()
      M.on_tool_call(root, params)
    end)
  then
    return
  end
  local line = render.tool_line(params)
  local ok, encoded = pcall(vim.json.encode, params.args)
  local key = tostring(params.tool) .. "\0" .. (ok and encoded or "")
  local index = chat.tools[key]
  if params.status ~= "started" and index then
    local current = vim.api.nvim_buf_get_lines(chat.buf, index, index + 1, false)[1] or ""
    if current:sub(1, 7) == "> tool " then
      set_lines(chat, index, index + 1, { line })
      chat.tools[key] = nil
      return
    end
  end
  local last, text = last_line(chat)
  if text == "" then
    set_lines(chat, last, last + 1, { line, "", "" })
    chat.tools[key] = last
  else
    append(chat, { "", line, "", "" })
    chat.tools[key] = last + 2
  end
  -- a tool call ends a model request the server keeps: a retry drops only what follows
  chat.pending.reply_line = vim.api.nvim_buf_line_count(chat.buf) - 1
  chat.pending.retry_line = nil
end

return M
