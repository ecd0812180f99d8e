// Command sandbox-lang-java is the Java language plugin.
package main

import (
	_ "embed"

	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
)

// javacHook is the warm compiler (run by java's source launcher).
//
//go:embed JavacHook.java
var javacHook string

// javac is the compile step's command, JVM options first: the warm
// compiler's JVM is started with the same ones.
var javac = []string{"javac", "-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1"}

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
				Command: []string{"java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", language.WarmDir + "/JavacHook.java"},
				Stands:  javac,
				Files:   map[string]string{"JavacHook.java": javacHook},
			}},
		},
		MainFile: "{class}.java",
		Compile:  append(javac[:len(javac):len(javac)], "-encoding", "UTF-8", "-d", "{outdir}", "{sources}"),
		Run:      []string{"java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dfile.encoding=UTF-8", "-cp", "{outdir}", "{class}"},
	})
}
