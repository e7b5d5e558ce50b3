-- The assistant's edits land in buffers; saving one as written is no drift, saving one the
-- user changed first is drift naming the file as changed after the assistant's edit.
local H = dofile(vim.env.AGENT_ASSIST_TEST_HELPERS)

local function save(path)
  vim.api.nvim_buf_call(vim.fn.bufnr(path), function()
    vim.cmd("silent write")
  end)
end

H.run(function(out)
  H.start()
  local spec = vim.fs.joinpath(vim.uv.cwd(), "agent_spec.md")
  local template = vim.fs.joinpath(vim.uv.cwd(), "templates", "a.md")
  vim.cmd("AgentAssist chat update the spec and the template")
  H.wait(function()
    return H.idle() and H.chat_text():find("Both updated.", 1, true) ~= nil
  end, "the tool turn")
  out.spec_buffer = H.lines_of(spec)
  out.template_buffer = H.lines_of(template)

  save(spec)
  out.status_after_save = H.request("agentAssist/status")

  -- the user changes the assistant's template before saving it
  vim.api.nvim_buf_set_lines(vim.fn.bufnr(template), 0, 1, false, { "Dear customer," })
  save(template)
  H.wait(function()
    return #H.events.drifts > 0
  end, "the drift of the changed template")
  out.status_after_user_edit = H.request("agentAssist/status")
  out.spec_disk = vim.fn.readfile(spec)
end)
