package language

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/sandboxd/sandboxd/plugins/language/proto"
)

// client is the host-side shim: Go interface in, proto over gRPC.
type client struct {
	rpc pb.LanguageClient
}

var _ Language = (*client)(nil)

func (c *client) Info(ctx context.Context) (Info, error) {
	resp, err := c.rpc.Info(ctx, &pb.InfoRequest{})
	if err != nil {
		return Info{}, fromStatus(err)
	}
	return Info{
		Name:           resp.Name,
		DisplayName:    resp.DisplayName,
		Version:        resp.Version,
		Extensions:     resp.Extensions,
		Aliases:        resp.Aliases,
		DefaultImage:   resp.DefaultImage,
		VersionCommand: resp.VersionCommand,
		InstallCommand: resp.InstallCommand,
		ContextCommand: resp.ContextCommand,
		Warm:           warmFromProto(resp.Warm),
	}, nil
}

func (c *client) Plan(ctx context.Context, req PlanRequest) (Plan, error) {
	resp, err := c.rpc.Plan(ctx, &pb.PlanRequest{
		Code:  req.Code,
		Files: filesToProto(req.Files),
		Entry: req.Entry,
		Args:  req.Args,
	})
	if err != nil {
		return Plan{}, fromStatus(err)
	}
	steps := make([]Step, len(resp.Steps))
	for i, st := range resp.Steps {
		steps[i] = Step{Name: st.Name, Argv: st.Argv}
	}
	return Plan{CodeFile: resp.CodeFile, Steps: steps, Env: resp.Env, Renames: resp.Renames}, nil
}

// fromStatus turns InvalidArgument back into ErrInvalidProgram, so the host
// can tell the client's mistakes from the plugin's failures. Any other
// status is kept (wrapped), so that the host can classify it by its code.
func fromStatus(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	if st.Code() == codes.InvalidArgument {
		return fmt.Errorf("%w: %s", ErrInvalidProgram, strings.TrimPrefix(st.Message(), ErrInvalidProgram.Error()+": "))
	}
	return fmt.Errorf("language plugin: %w", err)
}

func warmFromProto(ws []*pb.Warm) []Warm {
	if len(ws) == 0 {
		return nil
	}
	out := make([]Warm, len(ws))
	for i, w := range ws {
		out[i] = Warm{Command: w.Command, Stands: w.Stands, Env: w.Env, HookEnv: w.HookEnv, Files: w.Files, Exact: w.Exact, Forks: w.Forks}
	}
	return out
}
