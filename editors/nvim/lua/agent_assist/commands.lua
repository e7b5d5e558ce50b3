-- agent_assist.commands: `:AgentAssist {subcommand} [args]` and its completion.

local client = require("agent_assist.client")

local M = {}

--- Sessions listed at once (newest first): a project may have thousands; search finds the rest.
M.SESSION_PAGE = 200

local methods = client.methods
local INFO, WARN, ERROR = vim.log.levels.INFO, vim.log.levels.WARN, vim.log.levels.ERROR

--- What `:AgentAssist reset` asks before anything is sent.
M.RESET_PROMPT =
  "Reset Session (delete it)? This deletes this session's conversation log and checkpoints."
M.RESET_CHOICES = { "Delete session", "Cancel" }

local function chat()
  return require("agent_assist.chat")
end

--- A RequestFailed answer saying the user cancelled (`data: {cancelled: true}`): nothing changed.
---@param err lsp.ResponseError
---@return boolean
function M.cancelled_by_user(err)
  local data = err.data ---@type agent_assist.FailureData?
  return err.code == client.errors.request_failed
    and type(data) == "table"
    and data.cancelled == true
end

--- Send a request for the current root; report errors, hand results to `on_result`.
--- A cancel (e.g. at reset's question) is a choice and shows as information, any other failure
--- as an error.
local function ask(method, params, on_result)
  local root = client.root()
  client.request(root, method, params or {}, function(err, result)
    if err then
      if err.code == client.errors.method_not_found then
        client.notify(method .. " is not supported by this server version", WARN)
      else
        client.notify(err.message or "request failed", M.cancelled_by_user(err) and INFO or ERROR)
      end
      return
    end
    on_result(result, root)
  end)
end

local function join(list)
  if not list or #list == 0 then
    return "none"
  end
  return table.concat(list, ", ")
end

local function when(iso)
  if type(iso) ~= "string" then
    return "?"
  end
  return (iso:sub(1, 16):gsub("T", " "))
end

---@param root string
---@param session_id string
---@param then_fn? fun()
local function open_session(root, session_id, then_fn)
  client.request(root, methods.open, { sessionId = session_id }, function(err, result)
    if err then
      client.notify(err.message, ERROR)
      return
    end
    client.notify("opened session " .. result.sessionId)
    chat().open(root)
    chat().redraw(root, nil, then_fn)
  end)
end

local function fork(params)
  ask(methods.fork, params, function(result)
    client.notify(
      ("forked session %s from %s at event %s"):format(
        result.sessionId,
        result.parentSessionId,
        tostring(result.boundary)
      )
    )
  end)
end

local function restore(number)
  ask(methods.checkpoint, { number = number }, function(result)
    client.notify(
      ("restored checkpoint %d: restored %s; created since (kept) %s; skipped %s"):format(
        result.number,
        join(result.restoredFiles),
        join(result.createdFiles),
        join(result.skippedFiles)
      )
    )
  end)
end

local function show_context(context)
  if not context or context == "" then
    client.notify("this session has no resume context (fresh session)")
    return
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(context, "\n", { plain = true }))
  vim.bo[buf].filetype = "markdown"
  vim.bo[buf].modifiable = false
  vim.cmd("botright split")
  vim.api.nvim_win_set_buf(0, buf)
end

--- The turn count with the phase when there is one: `12 turns · code`.
---@param turns? integer
---@param phase? agent_assist.Phase
---@return string
function M.describe_turns(turns, phase)
  local text = ("%d %s"):format(turns or 0, turns == 1 and "turn" or "turns")
  if type(phase) == "string" and phase ~= "" then
    return text .. " · " .. phase
  end
  return text
end

--- One row of the `:AgentAssist sessions` picker.
---@param s agent_assist.SessionInfo
---@return string
function M.format_session(s)
  if s.older then -- the entry that lists the next page
    return ("Older sessions… (%d more)"):format(s.older)
  end
  if s.empty then -- a line that says how many were folded: choosing it does nothing
    return ("%d session%s without a turn not shown"):format(s.empty, s.empty == 1 and "" or "s")
  end
  return ("%s  %s  %s  %s%s"):format(
    s.sessionId,
    when(s.updatedAt),
    M.describe_turns(s.turns, s.phase),
    type(s.title) == "string" and s.title ~= "" and s.title or "(untitled)",
    s.active and "  (active)" or ""
  )
end

--- The `:AgentAssist sessions` picker for the page of `result` that starts at `offset`: its
--- prompt, and its items, the sessions then, if the project has older ones, an entry that
--- lists them (`{older = how many}`), and last, if the server folded sessions without a
--- turn, a line saying how many (`{empty = how many}`).
---@param result agent_assist.SessionsResult
---@param offset integer
---@return (agent_assist.SessionInfo|{older: integer}|{empty: integer})[] items
---@return string prompt
function M.session_page(result, offset)
  local rows = result.sessions or {}
  local total = result.total or (offset + #rows)
  local items = vim.list_extend({}, rows)
  local prompt = "Agent Assist: sessions"
  if offset > 0 then
    prompt = ("Agent Assist: sessions (%d–%d of %d)"):format(offset + 1, offset + #rows, total)
  elseif total > #rows then
    prompt = ("Agent Assist: sessions (the newest %d of %d)"):format(#rows, total)
  end
  local older = total - offset - #rows
  if older > 0 and #rows > 0 then
    table.insert(items, { older = older })
  end
  if type(result.empty) == "number" and result.empty > 0 then
    table.insert(items, { empty = result.empty })
  end
  return items, prompt
end

--- One row of the `:AgentAssist search` picker; a hit in no turn has no `turn N`.
---@param hit agent_assist.SearchHit
---@return string
function M.format_search_hit(hit)
  local turn = type(hit.turn) == "number" and ("  turn %d"):format(hit.turn) or ""
  return ("%s%s  %s: %s"):format(
    hit.sessionId,
    turn,
    hit.type or "",
    ((hit.snippet or ""):gsub("%s+", " "))
  )
end

--- The lines `:AgentAssist status` shows.
---@param s agent_assist.StatusResult
---@return string[]
function M.status_lines(s)
  local lines = {
    ("session %s%s%s"):format(
      s.sessionId,
      s.resumed and " (resumed)" or "",
      s.readOnly and " (read-only)" or ""
    ),
    ("state %s, %d waiting, %s"):format(
      s.state,
      s.waiting or 0,
      M.describe_turns(s.turns, s.phase)
    ),
    ("model %s, persistence %s"):format(tostring(s.model or "not configured"), s.persistence),
  }
  if type(s.contextWindow) == "number" then -- the window in use: the server may have lowered it
    table.insert(
      lines,
      ("context window %d tokens%s"):format(s.contextWindow, M.window_source(s.contextWindowSource))
    )
  end
  table.insert(lines, ("files drifted: %d"):format(s.drift or 0))
  return lines
end

--- Where the window in use comes from, for the status: nothing for the default or a setting.
---@param source? string `agentAssist/status`'s contextWindowSource
---@return string
function M.window_source(source)
  if source == "/props" or source == "/v1/models" then
    return (" (stated by the model server: %s)"):format(source)
  elseif source == "overflow" then
    return " (the model server refused a longer prompt)"
  end
  return ""
end

---@type table<string, fun(args: string[])>
M.subcommands = {
  chat = function(args)
    local text = table.concat(args, " ")
    if vim.trim(text) == "" then
      local c = chat().open()
      chat().prompt(c.root)
    else
      chat().send(text)
    end
  end,
  save = function()
    ask(methods.save, {}, function(result)
      client.notify(
        ("saved session %s (checkpoint %s) to %s"):format(
          result.sessionId,
          tostring(result.checkpoint),
          result.path
        )
      )
    end)
  end,
  reset = function()
    vim.ui.select(M.RESET_CHOICES, {
      prompt = "Agent Assist: " .. M.RESET_PROMPT,
      kind = "agent_assist.confirm",
    }, function(choice)
      if choice ~= M.RESET_CHOICES[1] then
        return -- declined or dismissed: nothing is sent
      end
      -- deleteFiles unset: the server asks about agent_spec.md and templates/; Cancel there
      -- answers RequestFailed with data.cancelled ("Reset cancelled; nothing was changed.")
      ask(methods.reset, {}, function(result)
        ---@cast result agent_assist.ResetResult
        local deleted = result.deletedFiles or {}
        client.notify(
          ("session deleted; new session %s%s"):format(
            result.sessionId,
            #deleted > 0 and ("; also deleted " .. join(deleted)) or ""
          )
        )
      end)
    end)
  end,
  new = function()
    ask(methods.new, {}, function(result)
      ---@cast result agent_assist.NewResult
      local previous = result.previousSessionId
      client.notify(
        type(previous) == "string"
            and ("new session %s (the previous one is kept: %s)"):format(result.sessionId, previous)
          or ("new session %s"):format(result.sessionId)
      )
    end)
  end,
  resume = function()
    ask(methods.resume, {}, function(result, root)
      chat().show_header(root, result, true) -- back even if it was dismissed
      show_context(result.context)
    end)
  end,
  dismiss = function()
    chat().dismiss()
  end,
  checkpoint = function(args)
    local number = tonumber(args[1])
    if args[1] and not number then
      client.notify("checkpoint takes a number", ERROR)
      return
    end
    if number then
      restore(number)
      return
    end
    ask(methods.checkpoint, {}, function(result)
      local items = result.checkpoints or {}
      if #items == 0 then
        client.notify("no checkpoints yet (:AgentAssist save makes one)")
        return
      end
      vim.ui.select(items, {
        prompt = "Agent Assist: restore checkpoint",
        kind = "agent_assist.checkpoint",
        format_item = function(cp)
          return ("#%d  turn %d  %s  %s%s"):format(
            cp.number,
            cp.turn or 0,
            when(cp.createdAt),
            cp.title or "",
            cp.auto and "  (auto)" or ""
          )
        end,
      }, function(choice)
        if choice then
          restore(choice.number)
        end
      end)
    end)
  end,
  compact = function()
    ask(methods.compact, {}, function(result)
      if not result.compacted then
        client.notify(result.reason or "nothing to compact")
        return
      end
      client.notify(
        ("compacted: %d → %d messages, %d → %d tokens%s"):format(
          result.messagesBefore,
          result.messagesAfter,
          result.tokensBefore,
          result.tokensAfter,
          result.fallback and " (extractive summary)" or ""
        )
      )
    end)
  end,
  fork = function(args)
    local boundary = tonumber(args[1])
    if args[1] and not boundary then
      client.notify("fork takes an event number", ERROR)
      return
    end
    fork({ boundary = boundary })
  end,
  search = function(args)
    local query = table.concat(args, " ")
    if vim.trim(query) == "" then
      client.notify("usage: :AgentAssist search {query}", ERROR)
      return
    end
    ask(methods.search, { query = query }, function(result, root)
      local hits = result.results or {}
      if #hits == 0 then
        client.notify("no results for " .. query)
        return
      end
      vim.ui.select(hits, {
        prompt = "Agent Assist: search " .. query,
        kind = "agent_assist.search",
        format_item = M.format_search_hit,
      }, function(choice)
        if choice then
          open_session(root, choice.sessionId, function()
            if type(choice.turn) == "number" then
              chat().goto_turn(root, choice.turn)
            end
          end)
        end
      end)
    end)
  end,
  sessions = function(_, offset)
    offset = offset or 0
    ask(methods.sessions, { offset = offset, limit = M.SESSION_PAGE }, function(result, root)
      local items, prompt = M.session_page(result, offset)
      vim.ui.select(items, {
        prompt = prompt,
        kind = "agent_assist.session",
        format_item = M.format_session,
      }, function(choice)
        if not choice or choice.empty then
          return
        end
        if choice.older then
          M.subcommands.sessions({}, offset + #(result.sessions or {}))
          return
        end
        vim.ui.select({ "Open", "Fork" }, {
          prompt = "Agent Assist: session " .. choice.sessionId,
          kind = "agent_assist.session_action",
        }, function(action)
          if action == "Open" then
            open_session(root, choice.sessionId)
          elseif action == "Fork" then
            fork({ sessionId = choice.sessionId })
          end
        end)
      end)
    end)
  end,
  open = function(args)
    if not args[1] then
      client.notify("usage: :AgentAssist open {sessionId}", ERROR)
      return
    end
    open_session(client.root(), args[1])
  end,
  history = function()
    chat().open()
    chat().redraw()
  end,
  status = function()
    ask(methods.status, {}, function(s)
      client.notify(table.concat(M.status_lines(s), "\n"))
    end)
  end,
  withdraw = function()
    chat().withdraw()
  end,
  filehistory = function(args)
    require("agent_assist.filehistory").run(args)
  end,
}

M.names = vim.tbl_keys(M.subcommands)
table.sort(M.names)

--- Run `:AgentAssist` with its arguments.
---@param fargs string[]
function M.run(fargs)
  local name = fargs[1] or "chat"
  local fn = M.subcommands[name]
  if not fn then
    client.notify(
      ("unknown subcommand %q; one of: %s"):format(name, table.concat(M.names, ", ")),
      ERROR
    )
    return
  end
  fn(vim.list_slice(fargs, 2))
end

local function matching(candidates, prefix)
  return vim.tbl_filter(function(c)
    return vim.startswith(c, prefix)
  end, candidates)
end

--- Completion of subcommands, checkpoint numbers, session ids and filehistory's files.
---@param arglead string
---@param cmdline string
---@return string[]
function M.complete(arglead, cmdline, _)
  local words = vim.split(vim.trim(cmdline), "%s+")
  local count = #words + (cmdline:match("%s$") and 1 or 0)
  if count <= 2 then
    return matching(M.names, arglead)
  end
  if count ~= 3 then
    return {}
  end
  local sub = words[2]
  if sub == "checkpoint" then
    local result = client.request_sync(nil, methods.checkpoint, {})
    local numbers = {}
    for _, cp in ipairs(result and result.checkpoints or {}) do
      table.insert(numbers, tostring(cp.number))
    end
    return matching(numbers, arglead)
  elseif sub == "open" then
    local result = client.request_sync(nil, methods.sessions, { limit = M.SESSION_PAGE })
    local ids = {}
    for _, s in ipairs(result and result.sessions or {}) do
      table.insert(ids, s.sessionId)
    end
    return matching(ids, arglead)
  elseif sub == "filehistory" then
    return vim.list_extend(matching({ "restore" }, arglead), vim.fn.getcompletion(arglead, "file"))
  end
  return {}
end

return M
