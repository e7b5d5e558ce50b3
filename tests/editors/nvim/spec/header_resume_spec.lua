-- Relaunch after files changed: the chat buffer's header says the session was resumed, lists
-- the changed files (open one, diff one against its checkpoint copy), shows what the assistant
-- remembers (a fold), stays above a new reply, and is dismissed; opened and forked sessions get
-- theirs, a new session none.
local H = dofile(vim.env.AGENT_ASSIST_TEST_HELPERS)

local function feed(keys)
  vim.api.nvim_feedkeys(vim.keycode(keys), "mx", false)
end

--- Put the cursor of the chat window on the header line that starts with `text`.
local function cursor_to(text)
  local c = H.chat()
  vim.api.nvim_set_current_win(vim.fn.bufwinid(c.buf))
  for i, line in ipairs(H.header_lines()) do
    if vim.startswith(line, text) then
      vim.api.nvim_win_set_cursor(0, { i, 0 })
      return i
    end
  end
  error("no header line starting with " .. text)
end

local function marks()
  local c = H.chat()
  local ns = require("agent_assist.header").namespace
  local found = {}
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(c.buf, ns, 0, -1, { details = true })) do
    local details = mark[4]
    local line = vim.api.nvim_buf_get_lines(c.buf, mark[2], mark[2] + 1, false)[1]
    if details.hl_group then
      local text = line:sub(mark[3] + 1, details.end_col)
      table.insert(found, { line = mark[2], text = text, group = details.hl_group })
    elseif details.virt_text then
      table.insert(found, { line = mark[2], hint = details.virt_text[1][1] })
    end
  end
  return found
end

local function wait_header(prefix, what)
  H.wait(function()
    return (H.header_lines()[1] or ""):find(prefix, 1, true) == 1
  end, what)
end

local function session_changes(reason)
  local n = 0
  for _, event in ipairs(H.events.session_changed) do
    n = n + (event.reason == reason and 1 or 0)
  end
  return n
end

H.run(function(out)
  H.choose("Resume")
  H.start()
  out.session_changed = H.events.session_changed[1]
  out.resume = H.request("agentAssist/resume")

  vim.cmd("AgentAssist history")
  wait_header("Resumed session", "the header")
  H.wait(function()
    return H.chat_text():find("Noted the plan.", 1, true) ~= nil
  end, "the transcript")
  out.buffer = H.buffer_lines()
  out.header = H.header_lines()
  out.transcript = H.chat_lines()
  out.marks = marks()
  out.links = {}
  for _, group in ipairs({
    "AgentAssistHeader",
    "AgentAssistHeaderFile",
    "AgentAssistHeaderModified",
    "AgentAssistHeaderCreated",
    "AgentAssistHeaderDeleted",
    "AgentAssistHeaderSection",
    "AgentAssistHeaderHint",
  }) do
    out.links[group] = vim.api.nvim_get_hl(0, { name = group }).link
  end

  -- "What I remember" is a fold: open at first, <CR> on its title closes it, za opens it
  local chat_win = vim.fn.bufwinid(H.chat().buf)
  local memory = cursor_to("What I remember")
  out.fold = { open_at_first = vim.fn.foldclosed(memory) == -1 }
  feed("<CR>")
  out.fold.closed_by_enter = vim.fn.foldclosed(memory) == memory
  out.fold.closed_end = vim.fn.foldclosedend(memory)
  feed("za")
  out.fold.open_again = vim.fn.foldclosed(memory) == -1

  -- <CR> on a changed file opens it in the other window; the chat stays
  cursor_to("  agent_spec.md")
  feed("<CR>")
  out.opened = {
    name = vim.api.nvim_buf_get_name(0),
    lines = vim.api.nvim_buf_get_lines(0, 0, -1, false),
    in_chat_window = vim.api.nvim_get_current_win() == chat_win,
    chat_shown = vim.api.nvim_win_is_valid(chat_win)
      and vim.api.nvim_win_get_buf(chat_win) == H.chat().buf,
  }

  -- gd diffs it against the checkpoint's copy, in a new tab page
  local tabs = #vim.api.nvim_list_tabpages()
  cursor_to("  agent_spec.md")
  feed("gd")
  H.wait(function()
    return #vim.api.nvim_list_tabpages() > tabs
  end, "the diff tab")
  out.diff = {}
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local buf = vim.api.nvim_win_get_buf(win)
    table.insert(out.diff, {
      name = vim.api.nvim_buf_get_name(buf),
      lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false),
      diff = vim.wo[win].diff,
      modifiable = vim.bo[buf].modifiable,
    })
  end
  vim.cmd("tabclose")

  -- a created file has no checkpoint copy: gd says so
  cursor_to("  templates/new.txt")
  feed("gd")
  out.no_copy = H.wait_notification("no checkpoint holds a copy").msg
  out.tabs_after_no_copy = #vim.api.nvim_list_tabpages()

  -- gd and <CR> below the header keep their own meaning (no file opened, no diff)
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(0), 0 })
  feed("gd")
  out.gd_below_header =
    { tabs = #vim.api.nvim_list_tabpages(), win = vim.api.nvim_get_current_win() == chat_win }

  -- a reply streams below the header, which goes and comes back meanwhile: dismissed before
  -- the first delta (the turn's lines move up), shown again while the reply streams
  vim.cmd("AgentAssist chat what now?")
  feed("dh")
  out.dismissed_before_delta = H.chat().header == nil and #H.events.deltas == 0
  H.wait(function()
    return H.chat_text():find("word3 ", 1, true) ~= nil
  end, "the reply to stream")
  vim.cmd("AgentAssist resume")
  wait_header("Resumed session", "the header back while streaming")
  vim.cmd("close") -- the resume context window
  out.shown_while_streaming = not H.idle()
  H.wait(function()
    return H.idle() and H.chat_text():find("the end.", 1, true) ~= nil
  end, "the reply")
  out.after_reply = H.buffer_lines()
  out.header_after_reply = H.header_lines()

  -- the turn's background summary changes what the assistant remembers, and so the header a
  -- later :AgentAssist resume shows: wait until it has landed, whatever the machine's load
  H.wait(function()
    out.resume_after_summary = H.request("agentAssist/resume")
    return out.resume_after_summary.summary ~= out.resume.summary
  end, "the summary of turn 2")

  -- dh dismisses it; a redraw does not bring it back, :AgentAssist resume does
  cursor_to("Resumed session")
  feed("dh")
  out.after_dismiss = H.buffer_lines()
  out.header_size_after_dismiss = H.chat().header_size
  vim.cmd("AgentAssist history")
  H.wait(function()
    return H.chat_text():find("the end.", 1, true) ~= nil
  end, "the redraw")
  H.request("agentAssist/status")
  out.after_redraw = H.buffer_lines()
  vim.cmd("AgentAssist resume")
  wait_header("Resumed session", "the header again")
  vim.cmd("close") -- the resume context window
  out.header_again = H.header_lines()
  vim.cmd("AgentAssist dismiss")
  out.after_dismiss_command = H.buffer_lines()
  vim.cmd("AgentAssist dismiss")
  out.nothing_to_dismiss = H.wait_notification("no session header").msg

  -- a new session has no header
  local old = H.request("agentAssist/status").sessionId
  vim.cmd("AgentAssist new")
  H.wait(function()
    return session_changes("new") >= 1
  end, "the new session")
  H.request("agentAssist/resume") -- answered after the one the chat asked
  out.after_new = H.buffer_lines()
  out.header_after_new = H.chat().header ~= nil

  -- opening the old session again: its header says so
  vim.cmd("AgentAssist open " .. old)
  wait_header("Opened session", "the opened header")
  H.wait(function()
    return H.chat_text():find("the end.", 1, true) ~= nil
  end, "the opened transcript")
  out.opened_header = H.header_lines()
  out.opened_transcript = H.chat_lines()

  -- a fork: its header too
  vim.cmd("AgentAssist fork")
  wait_header("Forked session", "the forked header")
  out.forked_header = H.header_lines()
  out.forked_resume = H.request("agentAssist/resume")
end)
