-- More sessions than a page (the project holds 250 copies of one recorded session): the
-- picker lists the newest 200 and says so, its last entry lists the older ones, one of those
-- opens.
local H = dofile(vim.env.AGENT_ASSIST_TEST_HELPERS)

H.run(function(out)
  H.start()
  H.answer = function(prompt, shown)
    -- (matched in full: a session's own prompt holds its random id, which may hold "201")
    if prompt:find("sessions (the newest", 1, true) then
      return #shown -- "Older sessions… (50 more)"
    elseif prompt:find("sessions (201", 1, true) then
      return #shown -- the oldest session
    end
    for i, item in ipairs(shown) do
      if item == "Open" then
        return i
      end
    end
  end
  vim.cmd("AgentAssist sessions")
  local pickers = {}
  H.wait(function()
    pickers = vim.tbl_filter(function(s)
      return vim.startswith(s.prompt, "Agent Assist: session")
    end, H.selects)
    return #pickers >= 3
  end, "the pickers")
  out.pickers = {}
  for _, s in ipairs(pickers) do
    table.insert(out.pickers, { prompt = s.prompt, count = #s.items, choice = s.choice })
  end
  local oldest = vim.split(pickers[2].choice, " ", { plain = true })[1]
  out.opened = H.wait_notification("opened session " .. oldest).msg
  out.oldest = oldest
end)
