package wire

import (
	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/runtime"
)

// APILimits is l as the wire shows it.
func APILimits(l runtime.Limits) api.Limits {
	return api.Limits{
		Timeout: api.Duration(l.Timeout), Memory: api.ByteSize(l.Memory), CPUs: l.CPUs,
		Pids: l.Pids, OutputLimit: api.ByteSize(l.OutputLimit),
	}
}
