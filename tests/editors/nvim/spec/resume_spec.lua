-- Second launch in the same directory: the resume question goes through vim.ui.select,
-- `:AgentAssist history` shows the earlier turns, the next chat continues the session,
-- and a tracked file changed outside Neovim brings a WARN notification naming it.
local H = dofile(vim.env.AGENT_ASSIST_TEST_HELPERS)

H.run(function(out)
  H.choose("Resume")
  H.start()
  out.session_changed = H.events.session_changed[1]

  vim.cmd("AgentAssist history")
  H.wait(function()
    return H.chat_text():find("Streamed reply number one", 1, true) ~= nil
  end, "the transcript")
  out.history = H.chat_lines()
  H.wait(function()
    return #H.header_lines() > 0
  end, "the session header")
  out.header = H.header_lines()

  vim.cmd("AgentAssist chat what did I say first?")
  H.wait(function()
    return H.idle() and H.chat_text():find("Echo: what did I say first?", 1, true) ~= nil
  end, "the reply")
  out.chat_after_reply = H.chat_lines()

  -- Neovim does not offer file watching on Linux: the server watches the workspace itself.
  local spec = vim.fs.joinpath(vim.uv.cwd(), "agent_spec.md")
  local n = 0
  local function changed_outside()
    for _, note in ipairs(H.notifications) do
      if note.level == vim.log.levels.WARN and note.msg:find("agent_spec.md", 1, true) then
        return true
      end
    end
    return false
  end
  -- Rewrite the file until the watcher (which starts asynchronously) reports it.
  while not changed_outside() and n < 30 do
    n = n + 1
    vim.fn.writefile({ "# Support agent", "changed outside, edit " .. n }, spec)
    vim.wait(1000, changed_outside, 20)
  end
  out.drift_writes = n
  out.status = H.request("agentAssist/status")
end)
