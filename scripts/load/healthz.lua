-- wrk script: the HTTP floor (no store or model work), with the same auth-free path.
request = function()
  return wrk.format("GET", "/healthz")
end
