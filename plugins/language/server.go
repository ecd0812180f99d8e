package language

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/sandboxd/sandboxd/plugins/language/proto"
)

// server is the plugin-side shim: proto in, Go interface, proto out.
type server struct {
	pb.UnimplementedLanguageServer
	impl Language
}

func (s *server) Info(ctx context.Context, _ *pb.InfoRequest) (*pb.InfoResponse, error) {
	info, err := s.impl.Info(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.InfoResponse{
		Name:           info.Name,
		DisplayName:    info.DisplayName,
		Version:        info.Version,
		Extensions:     info.Extensions,
		Aliases:        info.Aliases,
		DefaultImage:   info.DefaultImage,
		VersionCommand: info.VersionCommand,
		InstallCommand: info.InstallCommand,
		ContextCommand: info.ContextCommand,
		Warm:           warmToProto(info.Warm),
	}, nil
}

func (s *server) Plan(ctx context.Context, req *pb.PlanRequest) (*pb.PlanResponse, error) {
	plan, err := s.impl.Plan(ctx, PlanRequest{
		Code:  req.Code,
		Files: filesFromProto(req.Files),
		Entry: req.Entry,
		Args:  req.Args,
	})
	if err != nil {
		return nil, toStatus(err)
	}
	steps := make([]*pb.Step, len(plan.Steps))
	for i, st := range plan.Steps {
		steps[i] = &pb.Step{Name: st.Name, Argv: st.Argv}
	}
	return &pb.PlanResponse{CodeFile: plan.CodeFile, Steps: steps, Env: plan.Env, Renames: plan.Renames}, nil
}

// toStatus keeps the meaning of ErrInvalidProgram across the process boundary.
func toStatus(err error) error {
	if errors.Is(err, ErrInvalidProgram) {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

func filesToProto(files []File) []*pb.File {
	out := make([]*pb.File, len(files))
	for i, f := range files {
		out[i] = &pb.File{Path: f.Path, Content: f.Content, Mode: f.Mode}
	}
	return out
}

func filesFromProto(files []*pb.File) []File {
	out := make([]File, len(files))
	for i, f := range files {
		out[i] = File{Path: f.Path, Content: f.Content, Mode: f.Mode}
	}
	return out
}

func warmToProto(ws []Warm) []*pb.Warm {
	out := make([]*pb.Warm, len(ws))
	for i, w := range ws {
		out[i] = &pb.Warm{Command: w.Command, Stands: w.Stands, Env: w.Env, HookEnv: w.HookEnv, Files: w.Files, Exact: w.Exact, Forks: w.Forks}
	}
	return out
}
