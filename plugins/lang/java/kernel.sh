# sandboxd's context kernel for Java: one JShell (images/java/
# JShellKernel.java) that jq feeds one line per cell, each field base64
# (the mark holds a NUL): code, name, mark, and the cell's env as
# KEY:VALUE pairs joined by commas, or "-". The protocol is the language
# plugin contract's (plugins/language: ContextCommand).
read -r -d '' cells <<'JQ'
[(.code | @base64), (.name | @base64), (.mark | @base64),
 ((.env // {}) | to_entries | map((.key | @base64) + ":" + (.value | @base64)) | join(",") | if . == "" then "-" else . end)]
| join(" ")
JQ
exec java -XX:+UseSerialGC -Dfile.encoding=UTF-8 -Dstdout.encoding=UTF-8 -Dstderr.encoding=UTF-8 \
	-cp /usr/local/lib/sandboxd/jshell-kernel.jar JShellKernel \
	3< <(exec jq -r --unbuffered "$cells" <&3 4>&- 2>/dev/null)
