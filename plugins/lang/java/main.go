// Command sandbox-lang-java is the Java language plugin.
package main

import (
	_ "embed"

	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
)

// hook is the warm compiler (images/java/JavacHook.java), compiled into
// the image with an AppCDS archive of the classes it loads. An archive
// the JVM cannot use is passed over in silence: the JVM's warning would
// be on the compile step's output.
var hook = []string{"-XX:SharedArchiveFile=/usr/local/lib/sandboxd/javac.jsa", "-Xlog:cds=off,cds+dynamic=off",
	"-cp", "/usr/local/lib/sandboxd/javac-hook.jar", "JavacHook"}

// javac is the compile step's command, JVM options first: the warm
// compiler's JVM is started with the same ones.
var javac = []string{"javac", "-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1"}

// kernel is the context kernel: one JShell (images/java/JShellKernel.java),
// fed by jq.
//
//go:embed kernel.sh
var kernel string

func main() {
	plugins.Serve(&language.Template{
		Meta: language.Info{
			Name:           "java",
			DisplayName:    "Java",
			Version:        "1.0.0",
			Extensions:     []string{"java"},
			Aliases:        []string{},
			DefaultImage:   "sandboxd/java:latest",
			VersionCommand: []string{"java", "-version"},
			// javac started ahead, in a JVM whose compiler has run.
			Warm: []language.Warm{{
				Command: append([]string{"java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}, hook...),
				Stands:  javac,
			}},
			ContextCommand: []string{"bash", "-c", kernel},
		},
		MainFile: "{class}.java",
		Compile:  append(javac[:len(javac):len(javac)], "-encoding", "UTF-8", "-d", "{outdir}", "{sources}"),
		Run:      []string{"java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dfile.encoding=UTF-8", "-cp", "{outdir}", "{class}"},
	})
}
