# sandboxd's context kernel for Bash: one shell that runs each cell it is
# sent at its top level, so variables, functions, aliases, options and the
# working directory persist from cell to cell. The protocol is the language
# plugin contract's (plugins/language: ContextCommand): a cell is a JSON
# line on descriptor 3 ({"code", "name", "mark", "env"}), output goes to 1
# and 2, then the cell's mark on both, then a JSON reply line on
# descriptor 4 ({"name", "status", "exit_code"}).
#
# jq (in every image) turns each cell into one command, which the shell
# reads from a pipe: a cell is not inside a loop or a function of the
# kernel's, so its break, return and declare mean what they mean at a
# prompt, and its exit ends the context. The cell runs
# with /dev/null for stdin and without the kernel's descriptors 3 and 4
# (bash keeps copies of them, and of the pipe it reads, which a cell can
# reach to confuse its own context, as a python or node cell can); its env
# is exported for it and taken back after (keys that are shell names, not
# beginning __sandboxd_); set -x traces the cell, not the kernel.
read -r -d '' cells <<'JQ'
def hex: [(. / 16 | floor), (. % 16)] | map("0123456789abcdef"[.:.+1]) | add;
(.env // {}) as $env
| ($env | keys_unsorted | map(select(test("\\A[A-Za-z_][A-Za-z0-9_]*\\z") and (startswith("__sandboxd_") | not)))) as $keys
| (.mark | explode | map("\\x" + hex) | add) as $mark
| "{ __sandboxd_restore=(); for __sandboxd_k in \($keys | map(@sh) | join(" ")); do"
  + " if [[ -v $__sandboxd_k ]]; then __sandboxd_restore+=(\"export $__sandboxd_k=${!__sandboxd_k@Q}\");"
  + " else __sandboxd_restore+=(\"unset $__sandboxd_k\"); fi; done; "
  + ($keys | map("export \(.)=\($env[.] | @sh); ") | add // "")
  + "[[ -z ${__sandboxd_trace-} ]] || set -x; } 2>/dev/null\n"
  + "builtin eval \(.code | @sh) </dev/null 3<&- 4<&-\n"
  + "{ __sandboxd_status=$? __sandboxd_trace=${-//[^x]/}; set +x; } 2>/dev/null; "
  + "for __sandboxd_k in \"${__sandboxd_restore[@]}\"; do builtin eval \"$__sandboxd_k\"; done; "
  + "builtin printf '\($mark)'; builtin printf '\($mark)' >&2; "
  + "if [[ $__sandboxd_status = 0 ]]; then __sandboxd_k=ok; else __sandboxd_k=error; fi; "
  + "builtin printf '{\"name\":%s,\"status\":\"%s\",\"exit_code\":%d}\\n' \(.name | tojson | @sh) \"$__sandboxd_k\" \"$__sandboxd_status\" >&4"
JQ
# Interactive, as a shell at a prompt (and Jupyter's bash kernel) is: a
# cell's error, such as an unset variable under set -u, ends the cell and
# not the shell. Without prompts, line editing, job control, history or !
# expansion; what it says as it starts without a terminal is dropped.
PS1= PS2= exec bash --noprofile --norc --noediting -i +m +H +o history -s \
	< <(echo 'exec 2>&5 5>&-; export -n PS1 PS2'; exec jq -r --unbuffered "$cells" <&3 4>&- 2>/dev/null) 3<&- 5>&2 2>/dev/null
