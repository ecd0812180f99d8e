// Package bashwarm is the warm process of compile steps that a bash script
// stands in for: the script does ahead what it can, then receives the run
// (receive.sh) and builds its program faster than the step as given would,
// to the same result, or runs the step as given.
package bashwarm

import (
	_ "embed"

	"github.com/sandboxd/sandboxd/plugins/language"
)

var (
	//go:embed receive.sh
	receive string
	//go:embed gobuild.sh
	goBuild string
	//go:embed link.sh
	link string
)

// GoBuild stands in for `go build`, with the go command's fixed work done
// when the image was built (images/go/Dockerfile).
func GoBuild() language.Warm {
	return warm("gobuild.sh", goBuild, []string{"go", "build"}, nil)
}

// Link stands in for compiler (gcc, g++, rustc), and has it link with
// gold; flags are the compiler's flags for that.
func Link(compiler, flags string) language.Warm {
	return warm("link.sh", link, []string{compiler}, map[string]string{"SANDBOXD_LINK_FLAGS": flags})
}

func warm(name, script string, stands []string, hook map[string]string) language.Warm {
	return language.Warm{
		Command: []string{"bash", language.WarmDir + "/" + name},
		Stands:  stands,
		HookEnv: hook,
		Files:   map[string]string{"receive.sh": receive, name: script},
	}
}
