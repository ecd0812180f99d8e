# sandboxd's context kernel for R: one R session that evaluates each cell
# it is sent in its global environment, so that what a cell defines
# persists; each visible value is shown, as R prints it, the last as the
# cell's value. The protocol is the language plugin contract's
# (plugins/language: ContextCommand): a cell is a JSON line on descriptor
# 3 ({"code", "name", "mark", "env"}), output goes to 1 and 2, then the
# cell's mark on both, then a JSON reply line on descriptor 4 ({"name",
# "status", "exit_code", "display"}).
#
# jq (in every image) turns each cell into one call of sandboxd_cell (in
# an environment of its own on the search path, which a cell's rm() of its
# globals leaves be), which R reads from a pipe: a JSON string is an R string literal too, and
# the mark, which holds a NUL, comes as raw bytes. An error ends the cell
# (status error, its message on stderr), not the session; quit() ends the
# context. A cell's env is set for it and taken back after.
read -r -d '' cells <<'JQ'
"sandboxd_cell(\(.code | tojson), c(\((.env // {}) | to_entries | map("\(.key | tojson) = \(.value | tojson)") | join(", "))), "
+ "as.raw(c(\(.mark | explode | map(tostring) | join(", ")))), \(.name | tojson))"
JQ
read -r -d '' init <<'R'
options(warn = 1, width = 80)
local({
  reply <- file("/dev/fd/4", open = "w", raw = TRUE)
  out <- file("/dev/fd/1", open = "wb", raw = TRUE)
  err <- file("/dev/fd/2", open = "wb", raw = TRUE)
  json <- function(s) {
    s <- gsub("\\", "\\\\", s, fixed = TRUE)
    s <- gsub("\"", "\\\"", s, fixed = TRUE)
    s <- gsub("\n", "\\n", s, fixed = TRUE)
    s <- gsub("\r", "\\r", s, fixed = TRUE)
    s <- gsub("\t", "\\t", s, fixed = TRUE)
    s <- gsub("[[:cntrl:]]", " ", s)
    paste0("\"", s, "\"")
  }
  sandboxd_cell <- function(code, env, mark, name) {
    before <- if (length(env)) Sys.getenv(names(env), unset = NA, names = TRUE) else character(0)
    if (length(env)) do.call(Sys.setenv, as.list(env))
    shown <- character(0)
    status <- "ok"
    tryCatch({
      for (e in parse(text = code, keep.source = FALSE)) {
        r <- withVisible(eval(e, globalenv()))
        if (r$visible) shown <- c(shown, paste(utils::capture.output(print(r$value)), collapse = "\n"))
      }
    }, error = function(err) {
      status <<- "error"
      message("Error: ", conditionMessage(err))
    })
    for (k in names(before)) if (is.na(before[[k]])) Sys.unsetenv(k) else do.call(Sys.setenv, as.list(before[k]))
    flush(stdout())
    flush(stderr())
    flush.console()
    writeBin(mark, out)
    writeBin(mark, err)
    flush(out)
    flush(err)
    display <- vapply(seq_along(shown), function(i) sprintf("{\"mime\":\"text/plain\",\"data\":%s,\"main\":%s}",
      json(shown[[i]]), if (i == length(shown)) "true" else "false"), "")
    cat(sprintf("{\"name\":%s,\"status\":\"%s\",\"exit_code\":%d,\"display\":[%s]}\n", json(name), status,
      if (status == "ok") 0L else 1L, paste(display, collapse = ",")), file = reply)
    flush(reply)
    invisible()
  }
  attach(environment(), name = "sandboxd:kernel")
})
R
# Its cells' errors are caught, so that R, reading a script, does not stop
# at one; it echoes nothing.
exec R --vanilla --quiet --no-echo --no-readline \
	< <(printf '%s\n' "$init"; exec jq -r --unbuffered "$cells" <&3 4>&- 2>/dev/null) 3<&-
