-- :AgentAssist filehistory: the model wrote config.yaml in two turns; the picker lists both
-- changes, the newest is shown as a diff in a new tab page, and restore writes its "before".
local H = dofile(vim.env.AGENT_ASSIST_TEST_HELPERS)

local confirms = {} ---@type string[]
local confirm_answer = 2
vim.fn.confirm = function(msg)
  table.insert(confirms, msg)
  return confirm_answer
end

local function turn(text, reply)
  vim.cmd("AgentAssist chat " .. text)
  H.wait(function()
    return H.idle() and H.chat_text():find(reply, 1, true) ~= nil
  end, reply)
end

local function side(name)
  local buf = vim.fn.bufnr(name)
  if buf == -1 then
    return nil
  end
  local win = vim.fn.bufwinid(buf)
  return {
    lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false),
    diff = win ~= -1 and vim.wo[win].diff,
    modifiable = vim.bo[buf].modifiable,
    readonly = vim.bo[buf].readonly,
    filetype = vim.bo[buf].filetype,
    tab = win ~= -1 and vim.api.nvim_tabpage_get_number(vim.api.nvim_win_get_tabpage(win)),
    restore_key = vim.fn.maparg("gR", "n", false, true).desc ~= nil,
  }
end

H.run(function(out)
  H.start()
  turn("write the config", "Wrote the config.")
  turn("add the level", "Added the level.")
  local config = vim.fs.joinpath(vim.uv.cwd(), "config.yaml")
  out.config_after_turns = H.lines_of(config)

  -- nothing recorded for a file the assistant never touched; a path outside is refused
  vim.cmd("AgentAssist filehistory agent_spec.md")
  out.nothing = H.wait_notification("no change of").msg
  vim.cmd("AgentAssist filehistory ../outside.txt")
  H.wait(function()
    return #vim.tbl_filter(function(n)
      return n.level == vim.log.levels.ERROR
    end, H.notifications) > 0
  end, "the refusal of a path outside the workspace")
  out.outside = vim.tbl_filter(function(n)
    return n.level == vim.log.levels.ERROR
  end, H.notifications)

  -- from the file's buffer, without an argument: its changes, the newest first
  vim.cmd("wincmd p")
  vim.cmd.buffer(vim.fn.bufnr(config))
  out.tabs_before = #vim.api.nvim_list_tabpages()
  H.choose("turn 2")
  vim.cmd("AgentAssist filehistory")
  local before_name = "agent-assist://config.yaml@turn2.step1:before"
  local after_name = "agent-assist://config.yaml@turn2.step1:after"
  H.wait(function()
    return vim.fn.bufnr(after_name) ~= -1 and vim.fn.bufwinid(vim.fn.bufnr(before_name)) ~= -1
  end, "the diff of turn 2")
  out.before = side(before_name)
  out.after = side(after_name)
  out.tabs_after = #vim.api.nvim_list_tabpages()
  out.current = vim.api.nvim_buf_get_name(0)

  -- the key asks; Cancel sends nothing
  vim.api.nvim_set_current_win(vim.fn.bufwinid(vim.fn.bufnr(before_name)))
  vim.api.nvim_feedkeys(vim.keycode("gR"), "x", false)
  out.confirm_cancelled = vim.deepcopy(confirms)
  out.config_after_cancel = H.lines_of(config)

  -- the command asks too; Restore writes the "before" back into the file's buffer
  confirm_answer = 1
  vim.cmd("AgentAssist filehistory restore")
  out.restored = H.wait_notification("restored config.yaml").msg
  out.confirms = confirms
  out.config_restored = H.lines_of(config)
  vim.api.nvim_buf_call(vim.fn.bufnr(config), function()
    vim.cmd("silent write")
  end)
  out.config_disk = vim.fn.readfile(config)

  -- restore outside a diff buffer says how to get one
  vim.cmd("tabclose")
  vim.cmd("AgentAssist filehistory restore")
  out.not_in_diff = H.wait_notification("not in a file-history diff").msg
  out.diff_buffers_left = vim.fn.bufnr(before_name) ~= -1 or vim.fn.bufnr(after_name) ~= -1

  -- completion offers `restore` and the files
  out.completion = require("agent_assist.commands").complete("co", "AgentAssist filehistory co", 0)
  out.completion_restore =
    require("agent_assist.commands").complete("re", "AgentAssist filehistory re", 0)

  -- the words of a drift (no turn, no tool) and of a change that created the file
  local fh = require("agent_assist.filehistory")
  local drift = { sessionId = "abc", ts = "2026-12-05T14:30:07.123Z", kind = "drift" }
  out.drift_row = fh.format_change(drift)
  out.drift_name = fh.buffer_name("conf/app.yaml", drift, "after")
  local created = { sessionId = "abc", sessionTitle = "t", turn = 1, step = 2, kind = "write" }
  out.delete_question =
    fh.restore_question({ root = "/", path = "a.txt", change = created, before_absent = true })
end)
