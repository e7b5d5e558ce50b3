-- No server: the sessions picker rows and the status lines, with and without a phase; which
-- failures are a user's cancel; the contract's names come from the generated module; the
-- session header's lines; a compaction notice in the transcript.
local H = dofile(vim.env.AGENT_ASSIST_TEST_HELPERS)
local commands = require("agent_assist.commands")

H.run(function(out)
  local row = {
    sessionId = "s1",
    title = "support agent",
    createdAt = "2025-01-01T10:00:00Z",
    updatedAt = "2025-01-02T11:00:00Z",
    turns = 12,
    active = true,
  }
  out.session_unset = commands.format_session(row)
  out.session_code = commands.format_session(vim.tbl_extend("force", row, { phase = "code" }))
  out.session_one_turn = commands.format_session(vim.tbl_extend("force", row, { turns = 1 }))
  local untitled = vim.deepcopy(row)
  untitled.title = nil -- `title: null` on the wire
  out.session_untitled = commands.format_session(untitled)

  -- the picker's pages: the newest, a middle one, the last; the entry that lists older ones
  local function page(count, total, offset, empty)
    local sessions = {}
    for n = 1, count do
      sessions[n] = vim.tbl_extend("force", row, { sessionId = ("s%d"):format(offset + n) })
    end
    local result = { sessions = sessions, total = total, empty = empty }
    local items, prompt = commands.session_page(result, offset)
    local last = items[#items]
    return { prompt = prompt, items = #items, last = commands.format_session(last) }
  end
  out.page_all = page(2, 2, 0)
  out.page_newest = page(200, 450, 0)
  out.page_middle = page(200, 450, 200)
  out.page_last = page(50, 450, 400)
  -- the sessions without a turn the server folded: said on a last line
  out.page_folded = page(2, 2, 0, 3)
  out.page_folded_one = page(200, 450, 0, 1)
  out.page_folded_none = page(2, 2, 0, 0)

  local hit =
    { sessionId = "s1", seq = 3, turn = 2, type = "user", snippet = "an\n apple", score = 1 }
  out.hit_turn = commands.format_search_hit(hit)
  out.hit_no_turn = commands.format_search_hit(vim.tbl_extend("force", hit, { turn = vim.NIL }))

  local status = {
    sessionId = "s1",
    state = "idle",
    waiting = 0,
    resumed = false,
    turns = 12,
    model = "test-model",
    drift = 0,
    readOnly = false,
    persistence = "full",
    contextWindow = 64000,
  }
  out.status_unset = commands.status_lines(status)
  out.status_null = commands.status_lines(vim.tbl_extend("force", status, { phase = vim.NIL }))
  out.status_deploy = commands.status_lines(vim.tbl_extend("force", status, { phase = "deploy" }))
  out.status_learned = commands.status_lines(
    vim.tbl_extend("force", status, { contextWindow = 2048, contextWindowSource = "/props" })
  )
  out.status_set =
    commands.status_lines(vim.tbl_extend("force", status, { contextWindowSource = "setting" }))

  local failed = -32803
  local function cancelled(err)
    return commands.cancelled_by_user(vim.tbl_extend("force", { message = "m" }, err))
  end
  out.cancelled = {
    data_cancelled = cancelled({ code = failed, data = { cancelled = true } }),
    no_data = cancelled({ code = failed }),
    null_data = cancelled({ code = failed, data = vim.NIL }),
    not_cancelled = cancelled({ code = failed, data = { cancelled = false } }),
    other_code = cancelled({ code = -32603, data = { cancelled = true } }),
  }

  -- the session header, from agentAssist/resume results (null fields as vim.NIL)
  local header = require("agent_assist.header")
  local function shown(h)
    local files = {}
    for line, file in pairs(h.files) do
      table.insert(files, { line = line, path = file.path })
    end
    return { lines = h.lines, files = files, memory = h.memory or vim.NIL }
  end
  local forked = header.build({
    context = "",
    origin = "forked",
    lastActive = vim.NIL,
    summary = vim.NIL,
    decisions = {},
    changedFiles = { { path = "old.md", change = "deleted", checkpoint = 3 } },
  })
  out.header_forked = shown(forked)
  out.header_forked_hint = header.hint(forked, { open_file = "<CR>", diff = false, dismiss = "dh" })
  local resumed = header.build({
    context = "...",
    origin = "resumed",
    lastActive = "2026-03-31T14:22:05.123456+00:00",
    summary = "Line one.\n\nLine two.",
    decisions = { "Use PostgreSQL." },
    changedFiles = {},
  })
  out.header_resumed = shown(resumed)
  out.header_resumed_hint =
    header.hint(resumed, { open_file = "<CR>", diff = "gd", dismiss = "dh" })
  out.header_fresh = header.build({
    context = "",
    origin = vim.NIL,
    lastActive = vim.NIL,
    summary = vim.NIL,
    decisions = {},
    changedFiles = {},
  }) == nil
  out.times = {
    header.format_time("2026-03-31T23:50:00-01:30"),
    header.format_time("2026-12-31T23:59:59Z"),
    header.format_time("2026-03-01T00:10:00+02:00"),
    header.format_time("2024-03-01T00:10:00+02:00"),
    header.format_time("2026-03-31T14:22:05.5"),
  }
  out.bad_times = { header.format_time("yesterday") or "nil", header.format_time(vim.NIL) or "nil" }

  -- the transcript of agentAssist/history after a compaction: the notice has `turn: null`
  out.render_compacted = require("agent_assist.chat").render({
    { turn = 1, role = "user", text = "first question" },
    { turn = 1, role = "assistant", text = "First answer.", endReason = "completed" },
    { turn = vim.NIL, role = "notice", text = "Older turns were compacted." },
    { turn = 2, role = "user", text = "next question" },
  })

  local client, protocol = require("agent_assist.client"), require("agent_assist.protocol")
  out.generated_names = client.methods == protocol.methods and client.errors == protocol.errors
  out.methods = client.methods
  out.errors = client.errors

  -- the server orders the turns: a message sent while one runs is sent at once and shown when
  -- its turn starts, even if that start comes before the answer to the turn ahead of it
  local saved = { request = client.request, cancel = client.cancel, notify = client.notify }
  local answers, cancels, sent = {}, {}, {}
  client.request = function(_, method, params, callback, on_sent)
    if method == client.methods.chat then
      table.insert(sent, params.text)
      table.insert(answers, callback)
      on_sent(1, #answers)
    end
  end
  client.cancel = function(_, request_id)
    table.insert(cancels, request_id)
  end
  client.notify = function() end
  local chat, root = require("agent_assist.chat"), "/queue-order"
  chat.send("one", root)
  chat.on_turn_started(root, { turn = 1, text = "one" })
  chat.send("two", root)
  chat.send("three", root)
  chat.on_delta(root, { turn = 1, delta = "First." })
  chat.on_turn_started(root, { turn = 2, text = "two" })
  chat.on_delta(root, { turn = 2, delta = "Second." })
  answers[1](nil, { turn = 1, text = "First." })
  out.queue_sent = sent
  out.queue_withdrawn = chat.withdraw(root)
  out.queue_cancelled = cancels
  out.queue_lines = vim.api.nvim_buf_get_lines(chat.chats[root].buf, 0, -1, false)
  for name, fn in pairs(saved) do
    client[name] = fn
  end
end)
