-- First launch: streaming, a tool write through workspace/applyEdit (undoable), save,
-- completion, checkpoint list + restore. Quitting afterwards must autosave.
local H = dofile(vim.env.AGENT_ASSIST_TEST_HELPERS)

H.run(function(out)
  out.first_session = H.start()

  vim.cmd("AgentAssist chat hello there")
  H.wait(function()
    return H.idle() and H.chat_text():find("Streamed reply number one", 1, true) ~= nil
  end, "the streamed reply")
  out.deltas_turn1 = #H.events.deltas
  out.chat_after_turn1 = H.chat_lines()
  out.filetype = vim.bo[H.chat().buf].filetype

  vim.cmd("AgentAssist save")
  out.saved = H.wait_notification("saved session").msg

  local spec = vim.fs.joinpath(vim.uv.cwd(), "agent_spec.md")
  vim.cmd("AgentAssist chat please update the spec")
  H.wait(function()
    return H.idle() and H.chat_text():find("Updated the spec.", 1, true) ~= nil
  end, "the tool turn")
  out.chat_after_tool = H.chat_lines()
  out.spec_buffer_after_tool = H.lines_of(spec)
  local spec_buf = vim.fn.bufnr(spec)
  vim.api.nvim_buf_call(spec_buf, function()
    vim.cmd("silent undo")
  end)
  out.spec_buffer_after_undo = H.lines_of(spec)
  vim.api.nvim_buf_call(spec_buf, function()
    vim.cmd("silent redo")
  end)
  out.spec_buffer_after_redo = H.lines_of(spec)
  out.spec_disk_before_write = vim.fn.readfile(spec)
  -- The user keeps the assistant's edit: the checkpoint restore then has something to undo.
  vim.api.nvim_buf_call(spec_buf, function()
    vim.cmd("silent write")
  end)

  out.complete_subcommands = vim.fn.getcompletion("AgentAssist ", "cmdline")
  out.complete_checkpoints = vim.fn.getcompletion("AgentAssist checkpoint ", "cmdline")
  out.complete_sessions = vim.fn.getcompletion("AgentAssist open ", "cmdline")

  H.answer = function(prompt, shown)
    if prompt:find("restore checkpoint", 1, true) then
      for i, item in ipairs(shown) do
        if item:find("^#1 ") then
          return i
        end
      end
    end
  end
  vim.cmd("AgentAssist checkpoint")
  out.restored = H.wait_notification("restored checkpoint").msg
  H.wait(function()
    return not H.chat_text():find("Updated the spec.", 1, true)
  end, "the transcript to rewind")
  out.chat_after_restore = H.chat_lines()
  H.wait(function()
    return (H.lines_of(spec) or {})[2] == "three tools"
  end, "the restored spec in its buffer")
  out.spec_buffer_after_restore = H.lines_of(spec)
  out.status = H.request("agentAssist/status")
  vim.cmd("silent wall")

  -- VimLeave runs after the plugin's VimLeavePre: by then the server must have exited.
  vim.api.nvim_create_autocmd("VimLeave", {
    callback = function()
      local project = require("agent_assist.client").projects[H.root()]
      local file = assert(io.open(vim.env.AGENT_ASSIST_TEST_OUT .. ".leave", "w"))
      file:write(vim.json.encode({ server_exited = project.exited }))
      file:close()
    end,
  })
end)
