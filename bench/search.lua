-- bench/search.lua: wrk script for scripts/bench-search, one connection. Args (after --):
-- MODE QUERY POOL. MODE "turn": echo turns on the generated sessions s-000000.. (POOL of
-- them, in turn); "search": GET /api/v1/chat/sessions/search?q=QUERY; "both": a turn, then
-- a search (which catches the index up with that turn), and so on; "batch": ten turns, then
-- a search.
-- Prints the first non-2xx answer at the end.
function init(args)
  mode = args[1] or "turn"
  query = args[2] or "market"
  pool = tonumber(args[3] or "100") or 100
  n = 0
  errbody = nil
  headers = { ["Content-Type"] = "application/json" }
end

function request()
  n = n + 1
  if mode == "search" or (mode == "both" and n % 2 == 0) or (mode == "batch" and n % 11 == 0) then
    return wrk.format("GET", "/api/v1/chat/sessions/search?q=" .. query)
  end
  local sid = string.format("s-%06d", math.floor(n / 2) % pool)
  local body = '{"session_id":"' .. sid .. '","messages":[{"role":"user","content":"turn ' .. n
    .. ' about zanzibar"}]}'
  return wrk.format("POST", "/api/chat", headers, body)
end

function response(status, hdrs, body)
  if (status < 200 or status > 299) and errbody == nil then
    errbody = tostring(status) .. " " .. string.sub(body or "", 1, 300)
  end
end

function done(summary, latency, requests)
  if errbody then
    io.write("first error: " .. errbody .. "\n")
  end
end
