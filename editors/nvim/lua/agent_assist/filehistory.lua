-- agent_assist.filehistory: `:AgentAssist filehistory [path]`, a file's recorded changes
-- (`agentAssist/fileHistory`) in a picker; the chosen one as a diff of its before and after
-- (`agentAssist/fileVersion`) in a new tab page; `:AgentAssist filehistory restore` (or the
-- `restore` key there) writes its "before" back (`agentAssist/restoreFile`) after asking.

local client = require("agent_assist.client")
local config = require("agent_assist.config")

local M = {}

local methods = client.methods
local INFO, WARN, ERROR = vim.log.levels.INFO, vim.log.levels.WARN, vim.log.levels.ERROR

--- Characters of the user's message shown in a picker row.
M.MESSAGE_WIDTH = 60

---@class agent_assist.ShownChange What a diff buffer of a change shows (for restore).
---@field root string
---@field path string workspace-relative
---@field change agent_assist.FileChange
---@field before_absent boolean the file did not exist before the change

--- The diff buffers open now, by buffer number.
---@type table<integer, agent_assist.ShownChange>
M.shown = {}

local function str(value)
  return type(value) == "string" and value or nil
end

local function num(value)
  return type(value) == "number" and value or nil
end

--- `turn 2 · step 1`, `turn 2`, or `outside a turn` (a drift seen between turns).
---@param change agent_assist.FileChange
---@return string
function M.where(change)
  local turn, step = num(change.turn), num(change.step)
  if not turn then
    return "outside a turn"
  end
  return step and ("turn %d · step %d"):format(turn, step) or ("turn %d"):format(turn)
end

--- `turn2.step1`, `turn2`, or `drift.2026-12-05T14:30:00` (no spaces: part of a buffer name).
---@param change agent_assist.FileChange
---@return string
function M.label(change)
  local turn, step = num(change.turn), num(change.step)
  if not turn then
    return "drift." .. (str(change.ts) or "?"):sub(1, 19)
  end
  return step and ("turn%d.step%d"):format(turn, step) or ("turn%d"):format(turn)
end

--- The name of one side's scratch buffer: `agent-assist://config.yaml@turn2.step1:before`.
---@param path string
---@param change agent_assist.FileChange
---@param side "before"|"after"
---@return string
function M.buffer_name(path, change, side)
  return ("agent-assist://%s@%s:%s"):format(path, M.label(change), side)
end

local function when(iso)
  iso = str(iso)
  return iso and (iso:sub(1, 16):gsub("T", " ")) or "?"
end

--- One row of the picker: time, kind (and tool), session title, turn/step, the user's message.
---@param change agent_assist.FileChange
---@return string
function M.format_change(change)
  local kind = change.kind or "?"
  local tool = str(change.tool)
  if tool then
    kind = ("%s (%s)"):format(kind, tool)
  end
  local message = (str(change.userMessage) or ""):gsub("%s+", " ")
  if vim.fn.strchars(message) > M.MESSAGE_WIDTH then
    message = vim.fn.strcharpart(message, 0, M.MESSAGE_WIDTH - 1) .. "…"
  end
  return ("%s  %s  %s  %s%s"):format(
    when(change.ts),
    kind,
    str(change.sessionTitle) or "(untitled)",
    M.where(change),
    message ~= "" and ("  " .. message) or ""
  )
end

--- The change's address for fileVersion / restoreFile: its session and turn/step, or its time.
---@param path string
---@param change agent_assist.FileChange
---@param side "before"|"after"
---@return table
local function version_params(path, change, side)
  local params = { path = path, sessionId = change.sessionId, side = side }
  if num(change.turn) then
    params.turn, params.step = change.turn, num(change.step)
  else
    params.ts = str(change.ts)
  end
  return params
end

--- The path to look up: the argument (from the current directory), else this diff's file, else
--- the current buffer's file; nil when there is none.
---@param args string[]
---@return string?
local function target(args)
  if #args > 0 then
    return vim.fn.fnamemodify(table.concat(args, " "), ":p")
  end
  local shown = M.shown[vim.api.nvim_get_current_buf()]
  if shown then
    return shown.path
  end
  if vim.bo.buftype ~= "" then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(0)
  return name ~= "" and name or nil
end

local function fail(err)
  if err.code == client.errors.method_not_found then
    client.notify("file history is not supported by this server version", WARN)
  else
    client.notify(err.message or "request failed", ERROR)
  end
end

local function split_text(text)
  if text == "" then
    return {}
  end
  return vim.split((text:gsub("\n$", "")), "\n", { plain = true })
end

--- A read-only scratch buffer holding one side of the change.
---@param shown agent_assist.ShownChange
---@param side "before"|"after"
---@param text string
---@return integer
local function side_buffer(shown, side, text)
  local name = M.buffer_name(shown.path, shown.change, side)
  for _, old in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(old) == name then
      vim.api.nvim_buf_delete(old, { force = true }) -- an earlier diff of the same change
    end
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, name)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, split_text(text))
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].modifiable = false
  vim.bo[buf].readonly = true
  vim.b[buf].agent_assist_root = shown.root
  local filetype = vim.filetype.match({ filename = shown.path })
  if filetype then
    vim.bo[buf].filetype = filetype
  end
  M.shown[buf] = shown
  vim.api.nvim_create_autocmd("BufWipeout", {
    buffer = buf,
    once = true,
    callback = function()
      M.shown[buf] = nil
    end,
  })
  local key = config.get().keymaps.restore
  if key then
    vim.keymap.set("n", key, M.restore, {
      buffer = buf,
      silent = true,
      desc = "Agent Assist: restore the file as it was before this change",
    })
  end
  return buf
end

--- The text of one side, or nil with the reason it was not kept ("" when the file was absent).
---@param result agent_assist.FileVersionResult
---@return string? text
---@return string? reason
local function side_text(result)
  if type(result.text) == "string" then
    return result.text
  end
  if type(result.sha256) ~= "string" then
    return "" -- the file did not exist on that side
  end
  return nil, str(result.reason) or "its content was not kept"
end

--- Show one change as a diff in a new tab page: before on the left, after on the right.
---@param root string
---@param path string
---@param change agent_assist.FileChange
function M.show(root, path, change)
  local texts, absent = {}, {}
  local function got(side, err, result)
    if err then
      fail(err)
      return false
    end
    local text, reason = side_text(result)
    if not text then
      client.notify(("%s %s %s: not kept (%s)"):format(path, side, M.where(change), reason), WARN)
      return false
    end
    texts[side], absent[side] = text, type(result.sha256) ~= "string"
    return true
  end
  local before = version_params(path, change, "before")
  client.request(root, methods.file_version, before, function(err, result)
    if not got("before", err, result) then
      return
    end
    local after = version_params(path, change, "after")
    client.request(root, methods.file_version, after, function(err2, result2)
      if not got("after", err2, result2) then
        return
      end
      local shown = { root = root, path = path, change = change, before_absent = absent.before }
      local after_buf = side_buffer(shown, "after", texts.after)
      local before_buf = side_buffer(shown, "before", texts.before)
      vim.cmd("tab sbuffer " .. after_buf)
      local after_win = vim.api.nvim_get_current_win()
      vim.cmd.diffthis()
      vim.cmd("leftabove vertical sbuffer " .. before_buf)
      vim.cmd.diffthis()
      vim.api.nvim_set_current_win(after_win)
    end)
  end)
end

--- List the recorded changes of the file in a picker; show the chosen one.
---@param args string[]
function M.list(args)
  local path = target(args)
  if not path then
    client.notify("usage: :AgentAssist filehistory [path] (this buffer has no file)", ERROR)
    return
  end
  local shown = M.shown[vim.api.nvim_get_current_buf()]
  local root = shown and shown.root or client.root()
  client.request(root, methods.file_history, { path = path }, function(err, result)
    ---@cast result agent_assist.FileHistoryResult
    if err then
      fail(err)
      return
    end
    local changes = result.changes or {}
    local relative = str(result.path) or path
    if #changes == 0 then
      client.notify(("no change of %s is recorded"):format(relative), INFO)
      return
    end
    local prompt = ("Agent Assist: changes of %s"):format(relative)
    if result.truncated == true then
      prompt = prompt .. (" (the newest %d)"):format(#changes)
    end
    vim.ui.select(changes, {
      prompt = prompt,
      kind = "agent_assist.file_change",
      format_item = M.format_change,
    }, function(choice)
      if choice then
        M.show(root, relative, choice)
      end
    end)
  end)
end

--- The question before a restore, and whether the answer deletes the file.
---@param shown agent_assist.ShownChange
---@return string
function M.restore_question(shown)
  local change = shown.change
  local title = str(change.sessionTitle) or change.sessionId
  if shown.before_absent then
    return ("Delete %s? It did not exist before %s (%s)."):format(
      shown.path,
      M.where(change),
      title
    )
  end
  return ("Restore %s as it was before %s (%s)?"):format(shown.path, M.where(change), title)
end

--- Restore the "before" of the change shown in the current buffer, after a confirm.
function M.restore()
  local shown = M.shown[vim.api.nvim_get_current_buf()]
  if not shown then
    client.notify("not in a file-history diff: :AgentAssist filehistory opens one", ERROR)
    return
  end
  local choice = vim.fn.confirm(M.restore_question(shown), "&Restore\n&Cancel", 2)
  if choice ~= 1 then
    return
  end
  local params = version_params(shown.path, shown.change, "before")
  params.allowDelete = shown.before_absent or nil
  client.request(shown.root, methods.restore_file, params, function(err, result)
    ---@cast result agent_assist.RestoreFileResult
    if err then
      fail(err)
      return
    end
    if result.restored then
      client.notify(
        ("restored %s as it was before %s (unsaved; undo takes it back)"):format(
          shown.path,
          M.where(shown.change)
        )
      )
    else
      client.notify(("%s was not restored: %s"):format(shown.path, str(result.reason) or "?"), WARN)
    end
  end)
end

--- `:AgentAssist filehistory [path]` and `:AgentAssist filehistory restore`.
---@param args string[]
function M.run(args)
  if #args == 1 and args[1] == "restore" then
    M.restore()
  else
    M.list(args)
  end
end

return M
