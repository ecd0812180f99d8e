package sessions

import (
	"context"

	"github.com/sandboxd/sandboxd/internal/sandbox"
	"github.com/sandboxd/sandboxd/runtime"
)

// Ports lists the TCP ports listening in a session's sandbox, as its
// supervisor finds them; an execution running meanwhile does not hold it
// up.
func (m *Sessions) Ports(ctx context.Context, id string) ([]Port, error) {
	out := []Port{}
	aerr := m.Alongside(ctx, id, func(ss *Session, sb *runtime.Sandbox) error {
		listening, err := sandbox.WorkspaceOf(sb).Ports(ctx)
		out = append(out, listening...)
		return err
	})
	if aerr != nil {
		return nil, aerr
	}
	return out, nil
}
