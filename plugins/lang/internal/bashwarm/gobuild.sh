# sandboxd's warm Go build, run by bash: it stands in for
# `go build -o OUT FILE.go...`. The go command's fixed work (loading the
# standard library, checking it is up to date, the build info it stamps)
# was done once, when the image was built, in
# /usr/local/lib/sandboxd/go (images/go/Dockerfile). A build then only
# compiles the program's package and links it, as go build would, with no
# DWARF (nothing a program does reads it). Any other build, and any
# failure, is go build's own, so every diagnostic is exactly go build's.
. "${BASH_SOURCE%/*}/receive.sh"
baked=/usr/local/lib/sandboxd/go
fast=
# Only with the settings it was baked with (the environment, a go env file;
# where that file and the telemetry directory are, under HOME, are not
# settings, nor the temporary directory GOGCCFLAGS names).
if [[ -r $baked/importcfg && $(go env 2>/dev/null | grep -v -e ^GOENV= -e ^GOGCCFLAGS= -e ^GOTELEMETRYDIR=) == "$(<"$baked/goenv")" ]]; then
	fast=1
fi
receive

# build compiles and links argv's files, if it is a build it can do.
build() {
	[[ $fast && ${#argv[@]} -ge 5 && ${argv[0]} == go && ${argv[1]} == build && ${argv[2]} == -o ]] || return 1
	local out=${argv[3]} files=("${argv[@]:4}") file tools ok
	for file in "${files[@]}"; do
		[[ $file == *.go && $file != */* && $file != -* && $file != *_test.go ]] || return 1
	done
	tools=$(<"$baked/tooldir")
	# As go build runs them: the linker records GOROOT for runtime.GOROOT.
	export GOROOT=${tools%/pkg/tool/*}
	"$tools/compile" -o "$out.a" -p main -complete -D "_$PWD" -importcfg "$baked/importcfg" -pack "${files[@]/#/./}" &>/dev/null &&
		"$tools/link" -o "$out" -importcfg "$baked/importcfg.link" -buildmode=exe -w -extld=gcc "$out.a" &>/dev/null
	ok=$?
	rm -f "$out.a"
	return $ok
}

build && exit 0
exec env -i "${env[@]}" "${argv[@]}"
