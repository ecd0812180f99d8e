package sessions

import (
	"context"
	"fmt"

	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// Ports lists the TCP ports listening in a session's sandbox, as its
// supervisor finds them; an execution running meanwhile does not hold it
// up.
func (m *Sessions) Ports(ctx context.Context, id string) ([]supervisor.Port, error) {
	out := []supervisor.Port{}
	aerr := m.Alongside(ctx, id, func(ss *Session, sb *runtime.Sandbox) error {
		res, err := sb.File(ctx, supervisor.OpPorts, supervisor.FileRequest{}, nil, nil)
		if err != nil {
			return fmt.Errorf("listing the ports of session %s: %w", id, err)
		}
		if res.Error != "" {
			return sessionErr("listing the ports", res)
		}
		out = append(out, res.Ports...)
		return nil
	})
	if aerr != nil {
		return nil, aerr
	}
	return out, nil
}
