-- agent_assist.chat.buffer: The chat buffer's lines: the registry of chats, and writing that
-- keeps windows at the bottom following the text.

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
---@field early fun()[]         what it streamed while the turn ahead of it had not answered

---@class agent_assist.Chat
---@field root string
---@field buf integer
---@field pending? agent_assist.Turn
---@field queue agent_assist.Turn[] sent, waiting in the server's queue (shown once begun)
---@field version integer             bumped on every write (stale history answers are dropped)
---@field tools table<string, integer> tool call key -> 0-based line of its activity line
---@field header? agent_assist.Header  the session header at the top (nil: none shown)
---@field header_size integer          lines the header takes; the transcript starts below
---@field header_ticket integer        bumped per `agentAssist/resume` asked (older answers dropped)
---@field header_dismissed boolean     dismissed: not shown again until the session changes

---@type table<string, agent_assist.Chat>
M.chats = {}

M.USER_HEADER = "## You"
M.ASSISTANT_HEADER = "## Assistant"

---@param text string
---@return string[]
function M.split_lines(text)
  return vim.split((text or ""):gsub("\r\n", "\n"), "\n", { plain = true })
end

function M.valid(chat)
  return chat and vim.api.nvim_buf_is_valid(chat.buf)
end

function M.windows_of(buf)
  return vim.tbl_filter(function(win)
    return vim.api.nvim_win_get_buf(win) == buf
  end, vim.api.nvim_list_wins())
end

--- Replace lines [start, end_) and keep windows that were at the bottom following the text;
--- the cursor of another window below `start` moves by `shift` lines.
function M.write(chat, start, end_, lines, shift)
  local buf = chat.buf
  local last_before = vim.api.nvim_buf_line_count(buf)
  local follow, stay = {}, {}
  for _, win in ipairs(M.windows_of(buf)) do
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
function M.set_lines(chat, start, end_, lines)
  M.write(chat, start, end_, lines)
  chat.version = chat.version + 1
end

--- No transcript below the header: no lines, or one empty line.
function M.transcript_empty(chat)
  local count = vim.api.nvim_buf_line_count(chat.buf)
  if count == chat.header_size then
    return true
  end
  return count == chat.header_size + 1
    and vim.api.nvim_buf_get_lines(chat.buf, count - 1, count, false)[1] == ""
end

--- Replace the whole transcript (the header stays).
function M.set_transcript(chat, lines)
  M.set_lines(chat, chat.header_size, -1, lines)
end

function M.last_line(chat)
  local count = vim.api.nvim_buf_line_count(chat.buf)
  return count - 1, vim.api.nvim_buf_get_lines(chat.buf, count - 1, count, false)[1]
end

--- Append whole lines at the end (an empty transcript is replaced).
function M.append(chat, lines)
  if M.transcript_empty(chat) then
    M.set_transcript(chat, lines)
  else
    M.set_lines(chat, -1, -1, lines)
  end
end

--- Append streamed text to the last line.
function M.append_text(chat, text)
  local index, current = M.last_line(chat)
  local pieces = M.split_lines(text)
  pieces[1] = current .. pieces[1]
  M.set_lines(chat, index, index + 1, pieces)
end

return M
