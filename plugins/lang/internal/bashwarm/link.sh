# sandboxd's warm link, run by bash: it stands in for a compile step (gcc,
# g++, rustc) and has it link with gold, a faster linker than the default
# that makes the same programs ($SANDBOXD_LINK_FLAGS are the compiler's
# flags for it). A build that fails so is run again as given, so that every
# diagnostic, the linker's too, is the toolchain's own.
. "${BASH_SOURCE%/*}/receive.sh"
read -ra flags <<<"$SANDBOXD_LINK_FLAGS"
receive

log=${TMPDIR:-/tmp}/.sandboxd-link.$$
if env -i "${env[@]}" "${argv[0]}" "${flags[@]}" "${argv[@]:1}" >"$log.out" 2>"$log.err"; then
	[[ -s $log.out ]] && cat "$log.out"
	[[ -s $log.err ]] && cat "$log.err" >&2
	rm -f "$log.out" "$log.err"
	exit 0
fi
rm -f "$log.out" "$log.err"
exec env -i "${env[@]}" "${argv[@]}"
