package sandbox

// Spoil marks the lease's container as a run that did not end cleanly
// would: its Release removes it.
func (ls *Lease) Spoil(why string) { ls.lost = why }
