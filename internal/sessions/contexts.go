package sessions

import (
	"context"
	"fmt"

	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// Contexts lists a session's running contexts (the interpreters that keep
// state from exec to exec; an exec with a context starts its own).
func (m *Sessions) Contexts(ctx context.Context, id string) ([]supervisor.Context, error) {
	out := []supervisor.Context{}
	aerr := m.Use(ctx, id, func(_ *Session, sb *runtime.Sandbox) error {
		res, err := sb.File(ctx, supervisor.OpContexts, supervisor.FileRequest{}, nil, nil)
		if err != nil {
			return fmt.Errorf("listing contexts: %w", err)
		}
		out = append(out, res.Contexts...)
		return nil
	})
	return out, aerr
}

// EndContext ends a session's context: its interpreter and its state. Its
// next exec starts it afresh.
func (m *Sessions) EndContext(ctx context.Context, id, name string) error {
	return m.Use(ctx, id, func(_ *Session, sb *runtime.Sandbox) error {
		res, err := sb.File(ctx, supervisor.OpContextEnd, supervisor.FileRequest{Path: name}, nil, nil)
		if err != nil {
			return fmt.Errorf("ending context %s: %w", name, err)
		}
		if res.Error != "" {
			return sessionErr("context "+name, res)
		}
		return nil
	})
}
