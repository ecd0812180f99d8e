// Command sandbox-lang-java is the Java language plugin.
package main

import (
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
)

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
		},
		MainFile: "{class}.java",
		Compile:  []string{"javac", "-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1", "-encoding", "UTF-8", "-d", "{outdir}", "{sources}"},
		Run:      []string{"java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dfile.encoding=UTF-8", "-cp", "{outdir}", "{class}"},
	})
}
