// Package plugins is sandboxd's plugin SDK and host-side loader, built on
// hashicorp/go-plugin over gRPC.
//
// Plugin authors write one call, Serve(impl), in their main function. The
// daemon finds plugin binaries in plugin_dir by kind and name
// (sandbox-lang-<name>, sandbox-policy-<name>),
// starts them on first use, gives every call a deadline, and restarts a
// plugin that crashed or hung with exponential backoff. A plugin's failure is
// an error for the request that hit it, never a daemon crash.
//
// This package owns plugin processes; it knows nothing of containers.
package plugins

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/sandboxd/sandboxd/plugins/language"
	"github.com/sandboxd/sandboxd/plugins/policy"
)

// Handshake is shared by sandboxd and every plugin. Bump ProtocolVersion when
// the gRPC contract changes incompatibly: go-plugin then refuses a plugin
// built for another version with a message naming both. Version 2: a
// language plan names where the code goes instead of echoing every file.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  2,
	MagicCookieKey:   "SANDBOXD_PLUGIN",
	MagicCookieValue: "3c5d7e0b-language-and-policy-plugins",
}

// MaxMessage bounds one message between sandboxd and a plugin. A program
// (its files, in a plan request and back in the plan) may be as large as
// the API's request body, far over gRPC's 4 MiB default.
const MaxMessage = 256 << 20

// Kind is a plugin type; it also names the binary prefix.
type Kind string

const (
	// KindLanguage plugins describe languages (plugins/language).
	KindLanguage Kind = "lang"
	// KindPolicy plugins judge requests (plugins/policy).
	KindPolicy Kind = "policy"
)

// dispenseName is the go-plugin map key of the kind.
func (k Kind) dispenseName() string {
	if k == KindPolicy {
		return policy.PluginName
	}
	return language.PluginName
}

// BinaryName is the file name of a plugin of this kind in plugin_dir.
func (k Kind) BinaryName(name string) string { return "sandbox-" + string(k) + "-" + name }

// hostSet is the go-plugin map of the host side: it dispenses by kind.
var hostSet = plugin.PluginSet{language.PluginName: &language.Plugin{}, policy.PluginName: &policy.Plugin{}}

// Serve runs a language plugin. It is the whole main function of a plugin
// binary:
//
//	func main() { plugins.Serve(&language.Template{...}) }
//
// Started by hand rather than by sandboxd, it says so and exits 1.
func Serve(impl language.Language) {
	serve(plugin.PluginSet{language.PluginName: &language.Plugin{Impl: impl}})
}

// ServePolicy runs a policy plugin, as Serve does a language plugin:
//
//	func main() { plugins.ServePolicy(myPolicy{}) }
func ServePolicy(impl policy.Policy) {
	serve(plugin.PluginSet{policy.PluginName: &policy.Plugin{Impl: impl}})
}

func serve(set plugin.PluginSet) {
	if os.Getenv(Handshake.MagicCookieKey) != Handshake.MagicCookieValue {
		fmt.Fprintln(os.Stderr, "this is a sandboxd plugin: put it in sandboxd's plugin_dir; sandboxd starts it when needed")
		os.Exit(1)
	}
	// A service manager stopping sandboxd signals its whole control
	// group: a plugin ends when sandboxd closes it after the drain (or
	// dies: Pdeathsig), not before the drain's last call, and not as a
	// crash in the log. go-plugin eats SIGINT itself.
	signal.Ignore(syscall.SIGTERM)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         set,
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return plugin.DefaultGRPCServer(append(opts, grpc.MaxRecvMsgSize(MaxMessage)))
		},
		Logger: hclog.New(&hclog.LoggerOptions{
			Level:      hclog.Info,
			Output:     os.Stderr,
			JSONFormat: true,
		}),
	})
}
