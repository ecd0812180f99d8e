package sandbox

import "github.com/sandboxd/sandboxd/runtime"

// Spoil marks the lease's container as a run that did not end cleanly
// would: its Release removes it.
func (ls *Lease) Spoil(why string) { ls.lost = why }

// Sandbox is the lease's container.
func (ls *Lease) Sandbox() *runtime.Sandbox { return ls.sb }
