-- agent_assist.chat: The chat buffer: transcript, streaming replies, tool lines, prompt.

local client = require("agent_assist.client")
local config = require("agent_assist.config")
local header_mod = require("agent_assist.header")

local M = {}

---@class agent_assist.Turn
---@field text string
---@field client_id? integer
---@field request_id? integer
---@field turn? integer        server turn number, known from the first delta or the result
---@field header_line integer  0-based line of its "## You" header
---@field reply_line integer   0-based line where the current model request's text begins
---@field retry_line? integer  0-based line of the retry note just above `reply_line`
---@field got_delta boolean
---@field cancelled boolean

---@class agent_assist.Chat
---@field root string
---@field buf integer
---@field pending? agent_assist.Turn
---@field queue string[]
---@field version integer             bumped on every write (stale history answers are dropped)
---@field tools table<string, integer> tool call key -> 0-based line of its activity line
---@field header? agent_assist.Header  the session header at the top (nil: none shown)
---@field header_size integer          lines the header takes; the transcript starts below
---@field header_ticket integer        bumped per `agentAssist/resume` asked (older answers dropped)
---@field header_dismissed boolean     dismissed: not shown again until the session changes

---@type table<string, agent_assist.Chat>
M.chats = {}

pcall(vim.treesitter.language.register, "markdown", "agent_assist")

local USER_HEADER = "## You"
local ASSISTANT_HEADER = "## Assistant"

---@param text string
---@return string[]
local function split_lines(text)
  return vim.split((text or ""):gsub("\r\n", "\n"), "\n", { plain = true })
end

local function valid(chat)
  return chat and vim.api.nvim_buf_is_valid(chat.buf)
end

local function windows_of(buf)
  return vim.tbl_filter(function(win)
    return vim.api.nvim_win_get_buf(win) == buf
  end, vim.api.nvim_list_wins())
end

--- Replace lines [start, end_) and keep windows that were at the bottom following the text;
--- the cursor of another window below `start` moves by `shift` lines.
local function write(chat, start, end_, lines, shift)
  local buf = chat.buf
  local last_before = vim.api.nvim_buf_line_count(buf)
  local follow, stay = {}, {}
  for _, win in ipairs(windows_of(buf)) do
    local row = vim.api.nvim_win_get_cursor(win)[1]
    if win ~= vim.api.nvim_get_current_win() or row >= last_before then
      table.insert(follow, win)
    elseif shift and row > start then
      stay[win] = row + shift
    end
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, start, end_, false, lines)
  vim.bo[buf].modifiable = false
  local last = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(follow) do
    pcall(vim.api.nvim_win_set_cursor, win, { last, 0 })
  end
  for win, row in pairs(stay) do
    pcall(vim.api.nvim_win_set_cursor, win, { math.max(1, math.min(row, last)), 0 })
  end
end

--- Write transcript lines (the version is bumped: a history answer asked before is stale).
local function set_lines(chat, start, end_, lines)
  write(chat, start, end_, lines)
  chat.version = chat.version + 1
end

--- No transcript below the header: no lines, or one empty line.
local function transcript_empty(chat)
  local count = vim.api.nvim_buf_line_count(chat.buf)
  if count == chat.header_size then
    return true
  end
  return count == chat.header_size + 1
    and vim.api.nvim_buf_get_lines(chat.buf, count - 1, count, false)[1] == ""
end

--- Replace the whole transcript (the header stays).
local function set_transcript(chat, lines)
  set_lines(chat, chat.header_size, -1, lines)
end

local function last_line(chat)
  local count = vim.api.nvim_buf_line_count(chat.buf)
  return count - 1, vim.api.nvim_buf_get_lines(chat.buf, count - 1, count, false)[1]
end

--- Append whole lines at the end (an empty transcript is replaced).
local function append(chat, lines)
  if transcript_empty(chat) then
    set_transcript(chat, lines)
  else
    set_lines(chat, -1, -1, lines)
  end
end

--- Append streamed text to the last line.
local function append_text(chat, text)
  local index, current = last_line(chat)
  local pieces = split_lines(text)
  pieces[1] = current .. pieces[1]
  set_lines(chat, index, index + 1, pieces)
end

-- -- rendering ----------------------------------------------------------------------------

local function short(value)
  local text = type(value) == "string" and value or vim.json.encode(value)
  text = text:gsub("%s+", " ")
  if #text > 40 then
    text = text:sub(1, 37) .. "..."
  end
  return text
end

--- One line describing a tool call, e.g. "> tool `read_file` path=agent_spec.md: done".
---@param params agent_assist.ToolCallParams
---@return string
function M.tool_line(params)
  local args = params.args
  local shown = ""
  if type(args) == "table" then
    local keys = vim.tbl_keys(args)
    table.sort(keys, function(a, b)
      if (a == "path") ~= (b == "path") then
        return a == "path" -- the path first: it says what the tool works on
      end
      return a < b
    end)
    local parts = {}
    for _, key in ipairs(keys) do
      local value = args[key]
      if key == "content" and type(value) == "string" then
        table.insert(parts, ("content=<%d chars>"):format(#value))
      else
        table.insert(parts, key .. "=" .. short(value))
      end
    end
    shown = table.concat(parts, " ")
  elseif args ~= nil and args ~= vim.NIL then
    shown = short(args)
  end
  local line = "> tool `" .. tostring(params.tool) .. "`"
  if shown ~= "" then
    line = line .. " " .. shown
  end
  return line .. ": " .. tostring(params.status)
end

--- The mark under an answer that did not complete, e.g. "(incomplete: aborted)"; nil if it did.
---@param item agent_assist.TranscriptItem
---@return string?
function M.end_mark(item)
  local reason = item.endReason ~= "completed" and item.endReason or nil
  if item.partial then
    return reason and ("(incomplete: %s)"):format(reason) or "(incomplete)"
  end
  return reason and ("(%s)"):format(reason) or nil
end

--- The note shown when a model attempt is retried.
---@param params agent_assist.ChatRetryParams
---@return string
function M.retry_line(params)
  local reason = split_lines(tostring(params.reason or ""))[1]
  return ("> Retrying (attempt %s): %s"):format(tostring(params.attempt), reason)
end

--- Transcript items (`agentAssist/history`) as chat buffer lines.
---@param items agent_assist.TranscriptItem[]
---@return string[]
function M.render(items)
  local lines = {}
  local function add(list)
    vim.list_extend(lines, list)
  end
  for _, item in ipairs(items or {}) do
    local text = split_lines(item.text)
    if item.role == "user" then
      local numbered = type(item.turn) == "number"
      add({ numbered and ("%s (turn %d)"):format(USER_HEADER, item.turn) or USER_HEADER })
      add(text)
      add({ "" })
    elseif item.role == "assistant" then
      add({ ASSISTANT_HEADER })
      add(text)
      local mark = M.end_mark(item)
      if mark then
        add({ "", ("_%s_"):format(mark) })
      end
      add({ "" })
    else
      local status = item.status and (" (" .. item.status .. ")") or ""
      for i, line in ipairs(text) do
        add({ "> " .. (item.role == "tool" and i == 1 and "tool " or "") .. line })
      end
      lines[#lines] = lines[#lines] .. status
      add({ "" })
    end
  end
  return lines
end

-- -- the session header ------------------------------------------------------------------

--- Put `header` (nil: none) at the top of the chat. The transcript, the cursor and the lines
--- a running turn writes to move with it.
---@param chat agent_assist.Chat
---@param header? agent_assist.Header
local function set_header(chat, header)
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
  local chat = M.chats[root]
  if not valid(chat) then
    return
  end
  if force then
    chat.header_dismissed = false
  end
  if not chat.header_dismissed then
    set_header(chat, header_mod.build(result))
  end
end

--- Ask `agentAssist/resume` and show its header; only the newest answer is used.
local function refresh_header(chat)
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
  local chat = M.chats[root or client.root()]
  if not valid(chat) or not chat.header then
    client.notify("no session header to dismiss")
    return false
  end
  chat.header_dismissed = true
  chat.header_ticket = chat.header_ticket + 1 -- an answer on its way would bring it back
  set_header(chat, nil)
  return true
end

--- 'foldexpr' of chat windows: "What I remember" is a fold.
---@return string
function M.foldexpr()
  local buf = vim.api.nvim_get_current_buf()
  local chat = M.chats[vim.b[buf].agent_assist_root or ""]
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
local function file_at_cursor(chat)
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  return chat.header and row < chat.header_size and chat.header.files[row] or nil
end

--- The key's own meaning, for a header key used elsewhere in the buffer.
local function feed_default(lhs)
  local count = vim.v.count > 0 and tostring(vim.v.count) or ""
  vim.api.nvim_feedkeys(vim.keycode(count .. lhs), "n", false)
end

-- -- buffer and window -----------------------------------------------------------------

local function set_window_options(win)
  local wo = vim.wo[win][0]
  wo.foldmethod = "expr"
  wo.foldexpr = "v:lua.require'agent_assist.chat'.foldexpr()"
  wo.foldlevel = 99 -- "What I remember" starts open
end

local function set_keymaps(chat)
  local keys = config.get().keymaps
  local buf = chat.buf
  local function map(modes, lhs, fn, desc)
    if lhs then
      vim.keymap.set(modes, lhs, fn, { buffer = buf, silent = true, desc = desc })
    end
  end
  map("n", keys.open_file, function()
    local file = file_at_cursor(chat)
    local row = vim.api.nvim_win_get_cursor(0)[1] - 1
    if file then
      header_mod.open_file(chat.root, file, buf)
    elseif chat.header and chat.header.memory and row == chat.header.memory.first then
      vim.cmd("normal! za")
    else
      feed_default(keys.open_file)
    end
  end, "Agent Assist: open the changed file (session header)")
  map("n", keys.diff, function()
    local file = file_at_cursor(chat)
    if file then
      header_mod.diff(chat.root, file)
    else
      feed_default(keys.diff)
    end
  end, "Agent Assist: diff the changed file against its checkpoint copy")
  map("n", keys.dismiss, function()
    M.dismiss(chat.root)
  end, "Agent Assist: dismiss the session header")
  map("n", keys.prompt, function()
    M.prompt(chat.root)
  end, "Agent Assist: type a message")
  map({ "n", "i" }, keys.cancel, function()
    M.cancel(chat.root)
  end, "Agent Assist: cancel the running turn")
  map("n", keys.close, function()
    for _, win in ipairs(windows_of(buf)) do
      if #vim.api.nvim_list_wins() > 1 then
        vim.api.nvim_win_close(win, false)
      end
    end
  end, "Agent Assist: close the chat window")
end

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
  set_keymaps(chat)
  vim.api.nvim_create_autocmd("BufWinEnter", {
    buffer = buf,
    callback = function()
      local win = vim.api.nvim_get_current_win()
      if vim.api.nvim_win_get_buf(win) == buf then
        set_window_options(win)
      end
    end,
  })
  fill_from_history(chat)
  refresh_header(chat)
  return chat
end

local function open_window(buf)
  local layout = config.get().layout
  if layout == "float" then
    local float = config.get().float
    local function size(value, total)
      return math.max(10, math.floor(value <= 1 and value * total or value))
    end
    local width, height = size(float.width, vim.o.columns), size(float.height, vim.o.lines - 2)
    return vim.api.nvim_open_win(buf, true, {
      relative = "editor",
      width = width,
      height = height,
      row = math.floor((vim.o.lines - height) / 2) - 1,
      col = math.floor((vim.o.columns - width) / 2),
      border = float.border,
      title = " Agent Assist ",
      title_pos = "center",
    })
  end
  vim.cmd(layout == "split" and "botright split" or "botright vsplit")
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  return win
end

--- Open (or focus) the chat window of a root.
---@param root? string
---@return agent_assist.Chat
function M.open(root)
  root = root or client.root()
  local chat = M.buffer(root)
  local win = windows_of(chat.buf)[1]
  if win then
    vim.api.nvim_set_current_win(win)
  else
    win = open_window(chat.buf)
    vim.wo[win].wrap = true
    vim.wo[win].linebreak = true
    vim.wo[win].number = false
    vim.wo[win].conceallevel = 2
    set_window_options(win)
  end
  pcall(vim.api.nvim_win_set_cursor, win, { vim.api.nvim_buf_line_count(chat.buf), 0 })
  return chat
end

-- -- turns ----------------------------------------------------------------------------

local start_turn

local function next_in_queue(chat)
  local text = table.remove(chat.queue, 1)
  if text then
    start_turn(chat, text)
  end
end

--- Put the server's turn number on the user header once it is known.
local function number_turn(chat, turn, number)
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
    number_turn(chat, turn, result.turn)
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
  local chat = M.open(root)
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
  local chat = M.chats[root or client.root()]
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
  local chat = M.chats[root or client.root()]
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

-- -- notifications --------------------------------------------------------------------

--- The chat and its running turn a streaming notification is for (nil if none).
---@param root string
---@param params { turn: integer }
---@return table|nil chat
---@return table|nil turn
local function streaming_turn(root, params)
  local chat = M.chats[root]
  local turn = chat and chat.pending
  if not valid(chat) or not turn or turn.cancelled then
    return nil, nil
  end
  if turn.turn and params.turn ~= turn.turn then
    return nil, nil
  end
  number_turn(chat, turn, params.turn)
  return chat, turn
end

--- `agentAssist/chatDelta`: stream into the running turn.
---@param root string
---@param params agent_assist.ChatDeltaParams
function M.on_delta(root, params)
  local chat, turn = streaming_turn(root, params)
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
  local chat, turn = streaming_turn(root, params)
  if not chat or not turn then
    return
  end
  local start = turn.reply_line
  if turn.retry_line and turn.retry_line == start - 2 then
    start = turn.retry_line
  end
  set_lines(chat, start, -1, { M.retry_line(params), "", "" })
  turn.retry_line = start
  turn.reply_line = start + 2
  turn.got_delta = false -- no delta after this: the result's text is the answer
end

--- `agentAssist/toolCall`: one activity line per call, updated when it ends.
---@param root string
---@param params agent_assist.ToolCallParams
function M.on_tool_call(root, params)
  local chat = M.chats[root]
  if not valid(chat) or not chat.pending or chat.pending.cancelled then
    return
  end
  local line = M.tool_line(params)
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
    set_header(chat, nil)
  end
  refresh_header(chat)
  if chat.pending then
    return
  end
  if params.reason == "new" or params.reason == "reset" then
    set_transcript(chat, {})
  else
    M.redraw(root)
  end
end

--- The server exited: a running turn will not answer.
---@param root string
function M.on_exit(root)
  local chat = M.chats[root]
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

--- Put the cursor on the user header of a turn.
---@param root string
---@param turn integer
function M.goto_turn(root, turn)
  local chat = M.chats[root]
  if not valid(chat) then
    return
  end
  local wanted = ("%s (turn %d)"):format(USER_HEADER, turn)
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
