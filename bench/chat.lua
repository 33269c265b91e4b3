-- bench/chat.lua: wrk script for scripts/bench. POSTs an echo chat turn
--   {"session_id": "<tag>-t<thread>-<n>", "messages": [{"role": "user", "content": "hi"}]}
-- with a new session id per request, so concurrent turns never hit 409 session_busy.
-- Args (after --): TAG [PATH] [POOL]. PATH defaults to /api/chat. With POOL > 0 each thread
-- cycles through POOL session ids instead ("<tag>-t<thread>-p<k>"): turns that continue
-- existing sessions. POOL well above the connections per thread keeps 409 session_busy rare.
-- With a 4th arg "gen" the pool's ids are "<tag><k>" with k zero-padded to 6 digits, the
-- names bench/gen_sessions.c gives (turns on pre-generated sessions of a known length).
-- A 5th arg is the message instead of "hi" (no quotes or backslashes: "/tool ext {}").
-- Prints the first non-2xx answer of each thread ("first error: ...") at the end.
local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

function init(args)
  tag = args[1] or "bench"
  path = args[2] or "/api/chat"
  pool = tonumber(args[3] or "0") or 0
  gen = args[4] == "gen"
  content = args[5] or "hi"
  counter = 0
  errors = 0
  errbody = nil
  headers = { ["Content-Type"] = "application/json" }
  for k, v in pairs(wrk.headers) do headers[k] = v end -- wrk -H (Authorization)
end

function request()
  counter = counter + 1
  local sid
  if pool > 0 and gen then
    sid = string.format("%s%06d", tag, (counter + 7 * tid) % pool)
  elseif pool > 0 then
    sid = string.format("%s-t%d-p%d", tag, tid, counter % pool)
  else
    sid = string.format("%s-t%d-%d", tag, tid, counter)
  end
  local body = '{"session_id":"' .. sid .. '","messages":[{"role":"user","content":"' .. content .. '"}]}'
  return wrk.format("POST", path, headers, body)
end

function response(status, hdrs, body)
  if status < 200 or status > 299 then
    errors = errors + 1
    if errbody == nil then
      errbody = tostring(status) .. " " .. string.sub(body or "", 1, 300)
    end
  end
end

function done(summary, latency, requests)
  for i, t in ipairs(threads) do
    local e = t:get("errbody")
    if e then
      io.write(string.format("first error (thread %d, %d errors): %s\n", i, t:get("errors") or 0, e))
    end
  end
end
