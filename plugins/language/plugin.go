package language

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/sandboxd/sandboxd/plugins/language/proto"
)

// PluginName is the key of language plugins in go-plugin's plugin map.
const PluginName = "language"

// Plugin adapts a Language to go-plugin. Impl is set on the plugin side only.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl Language
}

var _ plugin.GRPCPlugin = (*Plugin)(nil)

// GRPCServer registers the plugin's implementation (plugin side).
func (p *Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterLanguageServer(s, &server{impl: p.Impl})
	return nil
}

// GRPCClient returns a Language that calls the plugin (host side).
func (p *Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (interface{}, error) {
	return &client{rpc: pb.NewLanguageClient(c)}, nil
}
