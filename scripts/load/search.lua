-- wrk script: hybrid searches over the benchmark store. Every query text is distinct (a
-- counter is appended), so the server's embedding cache never answers and each search embeds.
local queries = {
  "who started learning the cello", "trip to Lisbon", "rescue dog adoption",
  "half marathon last weekend", "vegan diet", "pottery class in Osaka",
  "novel about sailors", "tomatoes and basil", "chess club", "product design job",
  "bicycle repair", "sunset painting at the beach", "Maya in Berlin", "Kenji at the gym",
}
local n = 0
local tag = ""
init = function(args)
  -- wrk runs one Lua state per thread; a table's address tells them apart.
  tag = string.sub(tostring({}), -6)
end
request = function()
  n = n + 1
  local q = queries[(n % #queries) + 1] .. " " .. tag .. n
  local body = string.format('{"query": "%s", "user_id": "bench-user", "top_k": 10}', q)
  return wrk.format("POST", "/v1/memories/search", {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer " .. os.getenv("MNEMO_BENCH_KEY"),
  }, body)
end
