package sessions

import (
	"context"

	"github.com/sandboxd/sandboxd/internal/sandbox"
	"github.com/sandboxd/sandboxd/runtime"
)

// Contexts lists a session's running contexts (the interpreters that keep
// state from exec to exec; an exec with a context starts its own).
func (m *Sessions) Contexts(ctx context.Context, id string) ([]Context, error) {
	out := []Context{}
	aerr := m.Use(ctx, id, func(_ *Session, sb *runtime.Sandbox) error {
		running, err := sandbox.WorkspaceOf(sb).Contexts(ctx)
		out = append(out, running...)
		return err
	})
	return out, aerr
}

// EndContext ends a session's context: its interpreter and its state. Its
// next exec starts it afresh.
func (m *Sessions) EndContext(ctx context.Context, id, name string) error {
	return m.Use(ctx, id, func(_ *Session, sb *runtime.Sandbox) error {
		return sandbox.WorkspaceOf(sb).EndContext(ctx, name)
	})
}
