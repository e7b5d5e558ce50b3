-- agent_assist.header: The session header of the chat buffer: how this session came back,
-- the files changed since, what the assistant remembers (`agentAssist/resume`).

local client = require("agent_assist.client")
local config = require("agent_assist.config")

local M = {}

---@class agent_assist.HeaderMark
---@field line integer     0-based line within the header
---@field col integer      byte column where the highlight starts
---@field end_col integer  byte column where it ends (-1: the end of the line)
---@field group string

---@class agent_assist.Header
---@field lines string[]                              the last one is blank: it separates the transcript
---@field files table<integer, agent_assist.ChangedFile> 0-based header line -> the file it names
---@field memory? { first: integer, last: integer }   0-based lines of "What I remember" (its fold)
---@field marks agent_assist.HeaderMark[]

M.TITLES = { resumed = "Resumed session", opened = "Opened session", forked = "Forked session" }
M.MEMORY_TITLE = "What I remember"

local CHANGE_GROUPS = {
  modified = "AgentAssistHeaderModified",
  deleted = "AgentAssistHeaderDeleted",
  created = "AgentAssistHeaderCreated",
}

-- Linked to standard groups, so every colour scheme (and `:hi clear`) keeps them readable.
local LINKS = {
  AgentAssistHeader = "Title",
  AgentAssistHeaderFile = "Underlined",
  AgentAssistHeaderModified = "Changed",
  AgentAssistHeaderDeleted = "Removed",
  AgentAssistHeaderCreated = "Added",
  AgentAssistHeaderSection = "Statement",
  AgentAssistHeaderHint = "Comment",
}

--- Define the header's highlight groups as default links (a colour scheme may override them).
function M.define_highlights()
  for group, target in pairs(LINKS) do
    vim.api.nvim_set_hl(0, group, { link = target, default = true })
  end
end

M.define_highlights()
vim.api.nvim_create_autocmd("ColorScheme", {
  group = vim.api.nvim_create_augroup("agent_assist_header", { clear = true }),
  callback = M.define_highlights,
})

M.namespace = vim.api.nvim_create_namespace("agent_assist_header")

-- days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil)
local function days_from_civil(y, m, d)
  y = m <= 2 and y - 1 or y
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local doy = math.floor((153 * (m + (m > 2 and -3 or 9)) + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

local function civil_from_days(z)
  z = z + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor(
    (doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365
  )
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  return era * 400 + yoe + (m <= 2 and 1 or 0), m, d
end

--- An ISO 8601 timestamp (`2026-03-31T14:22:05.1+00:00`) as `2026-03-31 14:22 UTC`; nil if it
--- is not one. Without an offset it is taken as UTC.
---@param iso any
---@return string?
function M.format_time(iso)
  if type(iso) ~= "string" then
    return nil
  end
  local y, mo, d, h, mi = iso:match("^(%d%d%d%d)%-(%d%d)%-(%d%d)[T ](%d%d):(%d%d)")
  if not y then
    return nil
  end
  local offset = 0
  local sign, oh, om = iso:sub(17):match("([+-])(%d%d):?(%d%d)$")
  if sign then
    offset = (tonumber(oh) * 60 + tonumber(om)) * (sign == "-" and -1 or 1)
  end
  local minutes = days_from_civil(tonumber(y), tonumber(mo), tonumber(d)) * 1440
    + tonumber(h) * 60
    + tonumber(mi)
    - offset
  local days = math.floor(minutes / 1440)
  local rest = minutes - days * 1440
  local cy, cm, cd = civil_from_days(days)
  return ("%04d-%02d-%02d %02d:%02d UTC"):format(cy, cm, cd, math.floor(rest / 60), rest % 60)
end

local function count_files(n)
  if n == 0 then
    return "no files changed since"
  end
  return ("%d %s changed since"):format(n, n == 1 and "file" or "files")
end

local function split_lines(text)
  return vim.split((text or ""):gsub("\r\n", "\n"), "\n", { plain = true })
end

--- The header for an `agentAssist/resume` result; nil for a fresh session (`origin` null).
---@param result agent_assist.ResumeResult
---@return agent_assist.Header?
function M.build(result)
  local title = type(result) == "table" and M.TITLES[result.origin]
  if not title then
    return nil
  end
  ---@type agent_assist.Header
  local header = { lines = {}, files = {}, marks = {} }
  local function add(line, group, col, end_col)
    table.insert(header.lines, line)
    if group then
      local at = #header.lines - 1
      table.insert(
        header.marks,
        { line = at, col = col or 0, end_col = end_col or -1, group = group }
      )
    end
    return #header.lines - 1
  end
  local files = type(result.changedFiles) == "table" and result.changedFiles or {}
  local parts = { title }
  local when = M.format_time(result.lastActive)
  if when then
    table.insert(parts, "last active " .. when)
  end
  table.insert(parts, count_files(#files))
  add(table.concat(parts, " · "), "AgentAssistHeader")
  for _, file in ipairs(files) do
    local path, change = tostring(file.path), tostring(file.change)
    local line = add(("  %s (%s)"):format(path, change), "AgentAssistHeaderFile", 2, 2 + #path)
    local group = CHANGE_GROUPS[change]
    if group then
      table.insert(header.marks, { line = line, col = 3 + #path, end_col = -1, group = group })
    end
    header.files[line] = file
  end
  local summary = type(result.summary) == "string" and vim.trim(result.summary) or ""
  local decisions = type(result.decisions) == "table" and result.decisions or {}
  if summary ~= "" or #decisions > 0 then
    local first = add(M.MEMORY_TITLE, "AgentAssistHeaderSection")
    if summary ~= "" then
      for _, line in ipairs(split_lines(summary)) do
        add(line == "" and "" or "  " .. line)
      end
    end
    if #decisions > 0 then
      add("  Key decisions:", "AgentAssistHeaderSection", 2)
      for _, decision in ipairs(decisions) do
        add("  - " .. (split_lines(tostring(decision))[1] or ""))
      end
    end
    header.memory = { first = first, last = #header.lines - 1 }
  end
  add("")
  return header
end

--- The keys of what can be done with `header`, shown next to its first line, e.g.
--- `<CR> open · gd diff · za fold · dh dismiss`; a key set to false is left out.
---@param header agent_assist.Header
---@param keys agent_assist.Keymaps
---@return string
function M.hint(header, keys)
  local files, memory = next(header.files) ~= nil, header.memory ~= nil
  local parts = {}
  for _, action in ipairs({
    { files and keys.open_file, "open" },
    { files and keys.diff, "diff" },
    { memory and "za", "fold" },
    { keys.dismiss, "dismiss" },
  }) do
    if action[1] then
      table.insert(parts, action[1] .. " " .. action[2])
    end
  end
  return table.concat(parts, " · ")
end

--- Highlight a header just written at the top of `buf` (its marks, the hint of its keys).
---@param buf integer
---@param header? agent_assist.Header
function M.highlight(buf, header)
  vim.api.nvim_buf_clear_namespace(buf, M.namespace, 0, -1)
  if not header then
    return
  end
  for _, mark in ipairs(header.marks) do
    local text = header.lines[mark.line + 1]
    vim.api.nvim_buf_set_extmark(buf, M.namespace, mark.line, mark.col, {
      end_col = mark.end_col < 0 and #text or mark.end_col,
      hl_group = mark.group,
      priority = 200, -- above treesitter's markdown
    })
  end
  local hint = M.hint(header, config.get().keymaps)
  if hint ~= "" then
    vim.api.nvim_buf_set_extmark(buf, M.namespace, 0, 0, {
      virt_text = { { "  " .. hint, "AgentAssistHeaderHint" } },
      virt_text_pos = "eol",
    })
  end
end

-- -- actions ------------------------------------------------------------------------------

--- A window to show a file in: the previous one if it is an ordinary window, else another
--- ordinary window, else a new split. A floating chat window is closed first.
---@param chat_buf integer
local function go_to_file_window(chat_buf)
  local current = vim.api.nvim_get_current_win()
  if vim.api.nvim_win_get_config(current).relative ~= "" then
    vim.api.nvim_win_close(current, false)
    return
  end
  local function ordinary(win)
    return vim.api.nvim_win_is_valid(win)
      and vim.api.nvim_win_get_config(win).relative == ""
      and vim.api.nvim_win_get_buf(win) ~= chat_buf
  end
  local number = vim.fn.winnr("#")
  local previous = number > 0 and vim.fn.win_getid(number) or 0
  if previous ~= 0 and ordinary(previous) then
    vim.api.nvim_set_current_win(previous)
    return
  end
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if ordinary(win) then
      vim.api.nvim_set_current_win(win)
      return
    end
  end
  vim.cmd("leftabove vsplit")
end

--- Open a changed file of the header in an editing window.
---@param root string
---@param file agent_assist.ChangedFile
---@param chat_buf integer
function M.open_file(root, file, chat_buf)
  if file.change == "deleted" then
    local diff = config.get().keymaps.diff
    client.notify(
      ("%s was deleted since%s"):format(
        file.path,
        type(file.checkpoint) == "number"
            and diff
            and ("; %s shows the checkpoint's copy"):format(diff)
          or ""
      )
    )
    return
  end
  go_to_file_window(chat_buf)
  vim.cmd.edit(vim.fn.fnameescape(vim.fs.joinpath(root, file.path)))
end

--- A read-only scratch buffer holding a checkpoint's copy of a file.
---@param copy agent_assist.CheckpointFileResult
---@return integer
local function copy_buffer(copy)
  local name = ("agent-assist://checkpoint/%d/%s"):format(copy.number, copy.path)
  for _, old in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(old) == name then
      vim.api.nvim_buf_delete(old, { force = true }) -- an earlier diff of the same copy
    end
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, name)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, split_lines((copy.text:gsub("\n$", ""))))
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].modifiable = false
  local filetype = vim.filetype.match({ filename = copy.path })
  if filetype then
    vim.bo[buf].filetype = filetype
  end
  return buf
end

--- Diff a changed file against the checkpoint's copy of it (`agentAssist/checkpointFile`), in a
--- new tab page: the copy on the left, the file on the right.
---@param root string
---@param file agent_assist.ChangedFile
function M.diff(root, file)
  if type(file.checkpoint) ~= "number" then
    client.notify(("no checkpoint holds a copy of %s (%s since)"):format(file.path, file.change))
    return
  end
  local params = { path = file.path, number = file.checkpoint }
  client.request(root, client.methods.checkpoint_file, params, function(err, result)
    ---@cast result agent_assist.CheckpointFileResult
    if err then
      client.notify(err.message or "request failed", vim.log.levels.ERROR)
      return
    end
    if type(result.text) ~= "string" then
      client.notify(
        type(result.reason) == "string" and result.reason or ("no copy of " .. file.path)
      )
      return
    end
    vim.cmd.tabedit(vim.fn.fnameescape(vim.fs.joinpath(root, file.path)))
    local file_win = vim.api.nvim_get_current_win()
    local buf = copy_buffer(result)
    vim.cmd("leftabove vertical split")
    vim.api.nvim_win_set_buf(0, buf)
    vim.cmd.diffthis()
    vim.api.nvim_win_call(file_win, function()
      vim.cmd.diffthis()
    end)
    vim.api.nvim_set_current_win(file_win)
  end)
end

return M
