package languages

// shippedInstructions tell an AI agent what is particular about each
// shipped plugin's language here, when its block sets no instructions. The
// facts that vary with the configuration (version, limits, packages,
// network) are added where the instructions are shown (the MCP server).
var shippedInstructions = map[string]string{
	"python": `Python 3 for computation, data work and scripts. A program is main.py unless you name another entry file; files you send sit beside it in /workspace.
Print results to stdout; write files under /workspace/outputs to hand them back. Only the image's packages can be imported (pip has no network): check the package list before importing.
For work in steps, use a session with a context ("main"): variables and imports persist between calls and the last expression's value comes back.
For a project, a session's exec runs pytest, black, flake8 and mypy, and git, curl and jq.`,
	"node": `Node.js (JavaScript) for scripts and quick checks. A program is main.js; files you send sit beside it in /workspace.
Only the built-in modules and the image's packages are available (npm has no network). console.log goes to stdout.
For work in steps, use a session with a context: variables persist between calls.
For a project (with its package.json), a session's exec runs npx jest, npx eslint, npx prettier and tsc with no download, and git, curl and jq.`,
	"typescript": `TypeScript, compiled to JavaScript and run with Node.js. A program is main.ts; files you send sit beside it in /workspace.
Compile errors come back on stderr. Only built-in Node modules and the image's packages are available.`,
	"go": `Go for programs that want the standard library and speed. A program is main.go in package main; more .go files you send are compiled with it.
Build errors come back on stderr with file:line. There is no module download (no network): use the standard library.`,
	"java": `Java for programs and algorithm checks. Send a class with a main method.
Compile errors come back on stderr with file:line. Only the JDK's own library is available.
For a Maven project, a session's exec runs mvn -o package: offline, with the plugins of the default lifecycle and JUnit 4 (4.13.2) from the image.`,
	"ruby": `Ruby for scripts and text work. A program is main.rb; files you send sit beside it in /workspace. Only the standard library and the image's gems are available. A session's exec runs rspec and rubocop.`,
	"php":  `PHP (command line) for scripts. A program is main.php and needs its <?php opening tag. Only the extensions in the image are available. A session's exec runs composer (no network: validate, dump-autoload).`,
	"bash": `A POSIX shell with the image's command-line tools, for file work and commands. A program is main.sh; a session's exec runs commands directly.
There is no network unless the operator allows some hosts, and nothing outside /workspace and /tmp is writable.`,
	"c":   `C (gcc) for small programs and checks of behaviour. A program is main.c; more .c and .h files you send are compiled with it. Compiler errors come back on stderr with file:line.`,
	"cpp": `C++ (g++) for programs and algorithm checks. A program is main.cpp; more source and header files you send are compiled with it. Compiler errors come back on stderr with file:line.`,
	"csharp": `C# 7 with Mono (mcs, the .NET Framework 4.x library; not .NET Core). A program is main.cs with a class that has a static Main; more .cs files you send are compiled with it.
Compile errors come back on stderr with file(line,column). System, System.Linq and System.Collections.Generic are there; there is no NuGet (no network).`,
	"rust": `Rust (rustc) for programs. A program is main.rs, compiled alone: there are no crates (no network), only the standard library. Compiler errors come back on stderr with file:line.`,
}

// Instructions are what an agent is told of l: its block's, or its
// plugin's shipped ones.
func (l *Language) Instructions() string {
	if l.Config.Instructions != "" {
		return l.Config.Instructions
	}
	return shippedInstructions[l.Config.Plugin]
}
