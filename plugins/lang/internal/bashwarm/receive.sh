# receive says that the warm process is ready, then reads the run it is to
# be (see the language package's Warm) into argv and env.
receive() {
	printf 'ready\n' >&4
	exec 4>&-
	local fields=() field n envc
	while IFS= read -r -d '' field; do fields+=("$field"); done <&3
	exec 3<&-
	n=${fields[0]}
	argv=("${fields[@]:1:n}")
	envc=${fields[n + 1]}
	env=("${fields[@]:n+2:envc}")
}
