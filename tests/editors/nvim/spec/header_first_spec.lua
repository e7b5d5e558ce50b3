-- A fresh session (no header in its chat buffer) that records a decision, gets its running
-- summary and is saved (a checkpoint keeps a copy of agent_spec.md); quitting autosaves.
local H = dofile(vim.env.AGENT_ASSIST_TEST_HELPERS)

H.run(function(out)
  out.first_session = H.start()

  vim.cmd("AgentAssist chat design the templates")
  H.wait(function()
    return H.idle() and H.chat_text():find("Noted the plan.", 1, true) ~= nil
  end, "the reply")
  -- the chat buffer asked agentAssist/resume when it was made; one asked now is answered later
  out.fresh_resume = H.request("agentAssist/resume")
  out.fresh_header = H.chat().header ~= nil
  out.fresh_header_size = H.chat().header_size
  out.fresh_buffer = H.buffer_lines()

  local session = out.first_session.sessionId
  local log = vim.fn.glob(
    vim.env.AGENT_ASSIST_HOME .. "/projects/*/sessions/" .. session .. ".events.jsonl",
    true,
    true
  )[1]
  H.wait(function()
    return log ~= nil
      and table.concat(vim.fn.readfile(log), "\n"):find("session/summary", 1, true) ~= nil
  end, "the running summary")

  vim.cmd("AgentAssist save")
  out.saved = H.wait_notification("saved session").msg
end)
