-- A fresh project: search, fork, reset (keeping files), withdraw, cancel with <C-c>, new, checkhealth.
local H = dofile(vim.env.AGENT_ASSIST_TEST_HELPERS)

local function session_id()
  return H.request("agentAssist/status").sessionId
end

H.run(function(out)
  out.first_session = H.start()
  out.selects_at_start = #H.selects

  vim.cmd("AgentAssist chat alpha question")
  H.wait(function()
    return H.idle() and H.chat_text():find("Alpha answer", 1, true) ~= nil
  end, "the first reply")

  -- search: pick the first hit (it opens that session); MethodNotFound is reported as a WARN.
  H.choose("alpha")
  vim.cmd("AgentAssist search alpha")
  H.wait(function()
    if #H.selects > 0 then
      return true
    end
    for _, note in ipairs(H.notifications) do
      if note.msg:find("agentAssist/search", 1, true) or note.msg:find("no results", 1, true) then
        return true
      end
    end
    return false
  end, "search results or an error")
  out.search_selects = vim.deepcopy(H.selects)
  out.notifications_after_search = vim.deepcopy(H.notifications)

  -- fork: a new session from this one, with its transcript.
  local parent = session_id()
  vim.cmd("AgentAssist fork")
  out.forked = H.wait_notification("forked session").msg
  out.fork_parent = parent
  out.fork_child = session_id()
  H.wait(function()
    return #H.events.session_changed >= 2 and H.chat_text():find("Alpha answer", 1, true) ~= nil
  end, "the forked transcript")
  out.chat_after_fork = H.chat_lines()

  -- reset: confirmed, then the server asks about the files; keep them.
  H.choose("Delete session", "Keep files")
  local before = session_id()
  vim.cmd("AgentAssist reset")
  out.reset = H.wait_notification("session deleted").msg
  out.reset_from = before
  out.reset_to = session_id()
  out.reset_selects = vim.deepcopy(H.selects)
  H.wait(function()
    return H.chat_text() == ""
  end, "the chat to clear")
  out.chat_after_reset = H.chat_lines()
  out.spec_exists = vim.fn.filereadable("agent_spec.md") == 1

  -- cancel: <C-c> in the chat buffer while the slow reply streams.
  out.cancel_session = session_id()
  vim.cmd("AgentAssist chat tell me a long story")
  H.wait(function()
    return H.chat_text():find("Once", 1, true) ~= nil
  end, "the slow reply to start streaming")
  -- withdraw: two messages sent meanwhile wait; :AgentAssist withdraw takes them back.
  vim.fn.setreg('"', "")
  vim.cmd("AgentAssist chat a second thought")
  vim.cmd("AgentAssist chat a third thought")
  out.waiting_before_withdraw = #H.chat().queue
  vim.cmd("AgentAssist withdraw")
  out.withdrawn_note = H.wait_notification("withdrew").msg
  out.withdrawn_register = vim.fn.getreg('"')
  out.waiting_after_withdraw = #H.chat().queue
  -- a message still waiting when <C-c> cancels the running turn runs after it.
  vim.cmd("AgentAssist chat a queued question")
  vim.api.nvim_set_current_buf(H.chat().buf)
  vim.api.nvim_feedkeys(vim.keycode("<C-c>"), "x", false)
  H.wait(function()
    return H.chat_text():find("_(cancelled)_", 1, true) ~= nil
  end, "the cancelled marker")
  out.cancel_note = H.wait_notification("go on").msg
  H.wait(function()
    return H.idle() and H.chat_text():find("Echo: a queued question", 1, true) ~= nil
  end, "the queued question's reply")
  H.wait(function()
    return H.request("agentAssist/status").state == "idle"
  end, "the server to end the turn")
  out.chat_after_cancel = H.chat_lines()
  -- the server's exit handler (called directly, the chat idle) keeps waiting messages the
  -- same way instead of dropping them
  H.chat().queue = { { text = "left behind", early = {} } }
  require("agent_assist.chat").on_exit(H.root())
  out.exit_note = H.wait_notification("were not sent").msg
  out.exit_register = vim.fn.getreg('"')
  out.waiting_after_exit = #H.chat().queue

  -- new: a fresh session; the previous one stays on disk (and in the sessions list).
  vim.cmd("AgentAssist new")
  out.new = H.wait_notification("previous one is kept").msg
  out.new_session = session_id()
  out.sessions_after_new = {}
  for _, s in ipairs(H.request("agentAssist/sessions").sessions) do
    table.insert(out.sessions_after_new, s.sessionId)
  end

  -- chat without text: the buffer opens and the prompt (vim.ui.input) asks for the message.
  H.input_answer = "typed in the prompt"
  vim.cmd("AgentAssist chat")
  H.wait(function()
    return H.idle() and H.chat_text():find("Echo: typed in the prompt", 1, true) ~= nil
  end, "the reply to the prompt")
  out.inputs_after_prompt = vim.deepcopy(H.inputs)
  out.chat_after_prompt = H.chat_lines()

  vim.cmd("AgentAssist status")
  out.status_note = H.wait_notification("state idle").msg

  -- sessions picker: open the cancelled session again.
  H.answer = function(prompt, shown)
    for i, item in ipairs(shown) do
      if
        (prompt == "Agent Assist: sessions" and vim.startswith(item, out.cancel_session))
        or item == "Open"
      then
        return i
      end
    end
  end
  vim.cmd("AgentAssist sessions")
  out.opened = H.wait_notification("opened session " .. out.cancel_session).msg
  H.wait(function()
    return H.chat_text():find("tell me a long story", 1, true) ~= nil
  end, "the opened transcript")
  out.chat_after_open = H.chat_lines()
  out.sessions_selects = vim.list_slice(H.selects, #H.selects - 1)

  vim.cmd("AgentAssist resume")
  H.wait(function()
    return vim.bo.filetype == "markdown"
  end, "the resume context window")
  out.resume_context = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  vim.cmd("close")

  vim.cmd("AgentAssist compact")
  out.compact = H.wait_notification("compact").msg

  -- the float layout
  require("agent_assist").setup({ layout = "float" })
  vim.cmd("only")
  vim.cmd("enew")
  vim.cmd("AgentAssist history")
  out.float_relative = vim.api.nvim_win_get_config(0).relative
  out.float_buffer = vim.api.nvim_buf_get_name(0)

  vim.cmd("checkhealth agent_assist")
  out.health = vim.api.nvim_buf_get_lines(0, 0, -1, false)
end)
