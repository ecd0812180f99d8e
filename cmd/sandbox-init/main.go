// Command sandbox-init is the supervisor that runs as PID 1 in every
// sandbox container: see runtime/supervisor/sandboxinit.
package main

import "github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit"

func main() { sandboxinit.Main() }
