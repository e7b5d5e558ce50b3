-- :AgentAssist new keeps the previous session whole (listed, reopened, its log untouched);
-- :AgentAssist reset asks first: declining sends nothing, Cancel at the server's question is an
-- info, confirming deletes the session's log.
local H = dofile(vim.env.AGENT_ASSIST_TEST_HELPERS)

local function session_id()
  return H.request("agentAssist/status").sessionId
end

--- Answer the plugin's confirmation with `mine` and the server's question with `servers`.
local function answer_reset(mine, servers)
  H.answer = function(prompt, shown)
    local wanted = prompt:find("Reset Session (delete it)?", 1, true) and mine or servers
    for i, item in ipairs(shown) do
      if item == wanted then
        return i
      end
    end
  end
end

local function select_count(text)
  local count = 0
  for _, s in ipairs(H.selects) do
    if s.prompt:find(text, 1, true) then
      count = count + 1
    end
  end
  return count
end

H.run(function(out)
  H.start()

  vim.cmd("AgentAssist chat kiwi question")
  H.wait(function()
    return H.idle() and H.chat_text():find("Kiwi answer.", 1, true) ~= nil
  end, "the first reply")
  local old = session_id()
  out.old_session = old
  local logs = vim.fn.glob(
    vim.env.AGENT_ASSIST_HOME .. "/projects/*/sessions/" .. old .. ".events.jsonl",
    true,
    true
  )
  assert(#logs == 1, "no single log of the session: " .. vim.inspect(logs))
  local log = logs[1]
  out.log = log
  H.keep_copy(log, "before_new")

  -- new: a fresh session; the previous one is listed and its log untouched
  vim.cmd("AgentAssist new")
  out.new = H.wait_notification("previous one is kept").msg
  out.new_session = session_id()
  H.wait(function()
    return H.chat_text() == ""
  end, "the chat to clear")
  out.sessions_after_new = {}
  for _, s in ipairs(H.request("agentAssist/sessions").sessions) do
    table.insert(out.sessions_after_new, s.sessionId)
  end
  H.keep_copy(log, "after_new")

  -- the sessions picker opens it again, with its transcript
  H.answer = function(prompt, shown)
    for i, item in ipairs(shown) do
      if (prompt == "Agent Assist: sessions" and vim.startswith(item, old)) or item == "Open" then
        return i
      end
    end
  end
  vim.cmd("AgentAssist sessions")
  out.opened = H.wait_notification("opened session " .. old).msg
  H.wait(function()
    return H.chat_text():find("Kiwi answer.", 1, true) ~= nil
  end, "the reopened transcript")
  out.chat_after_open = H.chat_lines()
  out.session_after_open = session_id()
  H.keep_copy(log, "after_open")

  -- reset, declined: nothing is sent (had it been, the server's question would delete files)
  answer_reset("Cancel", "Delete files")
  vim.cmd("AgentAssist reset")
  -- a reset sent would have its question here before this answer (the server asks at once)
  out.session_after_decline = session_id()
  out.declined_confirmations = select_count("Reset Session (delete it)?")
  out.declined_server_questions = select_count("Also delete")
  out.log_after_decline = vim.fn.filereadable(log) == 1
  H.keep_copy(log, "after_decline")

  -- reset, confirmed, then Cancel at the server's question: an info, nothing changed
  answer_reset("Delete session", "Cancel")
  vim.cmd("AgentAssist reset")
  out.server_cancelled = H.wait_notification("Reset cancelled")
  out.session_after_server_cancel = session_id()
  out.log_after_server_cancel = vim.fn.filereadable(log) == 1

  -- reset, confirmed, keeping the files: the session's log is deleted
  answer_reset("Delete session", "Keep files")
  vim.cmd("AgentAssist reset")
  out.reset = H.wait_notification("session deleted").msg
  out.reset_to = session_id()
  out.log_after_reset = vim.fn.filereadable(log) == 1
  out.spec_after_reset = vim.fn.filereadable("agent_spec.md") == 1
  out.reset_selects = vim.deepcopy(H.selects)
end)
