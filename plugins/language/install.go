package language

import "strings"

// Install commands: how a derived image gets a language block's packages.
// Each runs as root in the image, with network, at build time; sandboxes
// never have network, so packages cannot be fetched at run time.

// InstallDebian installs packages as the Debian packages of those names.
var InstallDebian = []string{"sh", "-c", `set -e
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb`, "install", "{packages}"}

// InstallDebianFirst installs each package as the Debian package prefix +
// its lower-case name where Debian has one (built for the image's runtime,
// and reachable from a Debian mirror alone), else with installer, a shell
// command taking the names, from the Debian package installerDeb when set.
func InstallDebianFirst(prefix, installerDeb, installer string) []string {
	return []string{"sh", "-c", `set -e
apt-get update
debs= rest=
for p; do
	d="` + prefix + `$(printf %s "$p" | tr 'A-Z_' 'a-z-')"
	if apt-cache show "$d" >/dev/null 2>&1; then debs="$debs $d"; else rest="$rest $p"; fi
done
if [ -n "$rest" ] && [ -n "` + installerDeb + `" ]; then debs="$debs ` + installerDeb + `"; fi
if [ -n "$debs" ]; then DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $debs; fi
if [ -n "$rest" ]; then ` + installer + ` $rest; fi
rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb`, "install", "{packages}"}
}

// NodeModules is where InstallNPM puts packages; /node_modules links to it,
// so both require() and import find them from any directory.
const NodeModules = "/usr/local/lib/sandboxd/npm/node_modules"

// InstallNPM installs npm packages. Without npm in the image it fetches
// npm's own tarball (its dependencies bundled) from the registry with node.
var InstallNPM = []string{"sh", "-c", `set -e
npm="npm"
if ! command -v npm >/dev/null; then
	mkdir -p /tmp/npm
	node -e 'fetch(process.argv[1]).then(r => { if (!r.ok) throw new Error(r.status + " " + r.url); return r.arrayBuffer() }).then(b => require("fs").writeFileSync("/tmp/npm.tgz", Buffer.from(b)))' \
		"${NPM_CONFIG_REGISTRY:-https://registry.npmjs.org}/npm/-/npm-10.9.2.tgz"
	tar -xzf /tmp/npm.tgz -C /tmp/npm --strip-components=1
	npm="node /tmp/npm/bin/npm-cli.js"
fi
dir=` + strings.TrimSuffix(NodeModules, "/node_modules") + `
mkdir -p "$dir" && cd "$dir"
# --prefix: the root is $dir, not an ancestor that has a node_modules
# (npm's own, where npm is installed under /usr/local).
$npm install --prefix "$dir" --no-audit --no-fund --no-update-notifier --omit=dev "$@"
ln -sfn "$dir/node_modules" /node_modules
rm -rf /tmp/npm /tmp/npm.tgz /root/.npm`, "install", "{packages}"}

// InstallArgv is an install command with the package names filled in.
func InstallArgv(cmd, packages []string) []string {
	if len(cmd) == 0 {
		cmd = InstallDebian
	}
	return expand(cmd, strings.NewReplacer(), "{packages}", packages)
}
