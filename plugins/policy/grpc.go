package policy

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/sandboxd/sandboxd/plugins/policy/proto"
)

// PluginName is the key of policy plugins in go-plugin's plugin map.
const PluginName = "policy"

// Plugin adapts a Policy to go-plugin. Impl is set on the plugin side only.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl Policy
}

var _ plugin.GRPCPlugin = (*Plugin)(nil)

// GRPCServer registers the plugin's implementation (plugin side).
func (p *Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterPolicyServer(s, &server{impl: p.Impl})
	return nil
}

// GRPCClient returns a Policy that calls the plugin (host side).
func (p *Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (interface{}, error) {
	return &client{rpc: pb.NewPolicyClient(c)}, nil
}

// client is the host-side shim.
type client struct{ rpc pb.PolicyClient }

func (c *client) Info(ctx context.Context) (Info, error) {
	r, err := c.rpc.Info(ctx, &pb.InfoRequest{})
	if err != nil {
		return Info{}, err
	}
	return Info{Name: r.Name, Version: r.Version, Description: r.Description, DefaultMode: r.DefaultMode, Rules: r.Rules, Kinds: r.Kinds}, nil
}

func (c *client) Check(ctx context.Context, req Request) (Verdict, error) {
	files := make([]*pb.File, len(req.Files))
	for i, f := range req.Files {
		files[i] = &pb.File{Path: f.Path, Content: f.Content}
	}
	r, err := c.rpc.Check(ctx, &pb.CheckRequest{
		Kind: req.Kind, Language: req.Language, Files: files, Entry: req.Entry, Argv: req.Argv, Cwd: req.Cwd,
		Limits: limitsToProto(req.Limits), Ceilings: limitsToProto(req.Ceilings), Session: req.Session, Options: req.Options,
	})
	if err != nil {
		return Verdict{}, err
	}
	v := Verdict{Deny: r.Deny, Findings: make([]Finding, len(r.Findings))}
	for i, f := range r.Findings {
		v.Findings[i] = Finding{Rule: f.Rule, Severity: f.Severity, Message: f.Message, File: f.File,
			Line: int(f.Line), Column: int(f.Column), Snippet: f.Snippet}
	}
	return v, nil
}

// server is the plugin-side shim.
type server struct {
	pb.UnimplementedPolicyServer
	impl Policy
}

func (s *server) Info(ctx context.Context, _ *pb.InfoRequest) (*pb.InfoResponse, error) {
	i, err := s.impl.Info(ctx)
	if err != nil {
		return nil, err
	}
	return &pb.InfoResponse{Name: i.Name, Version: i.Version, Description: i.Description, DefaultMode: i.DefaultMode, Rules: i.Rules, Kinds: i.Kinds}, nil
}

func (s *server) Check(ctx context.Context, r *pb.CheckRequest) (*pb.CheckResponse, error) {
	files := make([]File, len(r.Files))
	for i, f := range r.Files {
		files[i] = File{Path: f.Path, Content: f.Content}
	}
	v, err := s.impl.Check(ctx, Request{
		Kind: r.Kind, Language: r.Language, Files: files, Entry: r.Entry, Argv: r.Argv, Cwd: r.Cwd,
		Limits: limitsFromProto(r.Limits), Ceilings: limitsFromProto(r.Ceilings), Session: r.Session, Options: r.Options,
	})
	if err != nil {
		return nil, err
	}
	out := &pb.CheckResponse{Deny: v.Deny, Findings: make([]*pb.Finding, len(v.Findings))}
	for i, f := range v.Findings {
		out.Findings[i] = &pb.Finding{Rule: f.Rule, Severity: f.Severity, Message: f.Message, File: f.File,
			Line: int32(f.Line), Column: int32(f.Column), Snippet: f.Snippet}
	}
	return out, nil
}

func limitsToProto(l Limits) *pb.Limits {
	return &pb.Limits{TimeoutMs: l.TimeoutMS, Memory: l.Memory, Cpus: l.CPUs, Pids: l.Pids}
}

func limitsFromProto(l *pb.Limits) Limits {
	if l == nil {
		return Limits{}
	}
	return Limits{TimeoutMS: l.TimeoutMs, Memory: l.Memory, CPUs: l.Cpus, Pids: l.Pids}
}
