package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func newImagesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "images", Short: "Build the languages' images"}
	var asJSON, quiet bool
	build := &cobra.Command{
		Use:   "build [LANGUAGE...]",
		Short: "Build languages' images (all when none is named), with the packages their blocks list",
		Long: `Builds each named language's image from its Dockerfile in sandboxd's images
directory (from the engine's layer cache when nothing changed), then the image
derived from it with the packages its language block lists. A language that
runs on Kubernetes also gets the image its pods pull: the same, with the
supervisor in it, pushed to the runtime's image_registry. Output of the
builds streams as it comes; warm containers of a rebuilt image are replaced.
Exit 0 when every image built, 1 when one failed.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			progress := func(image, line string) { fmt.Fprintf(os.Stderr, "%s: %s\n", image, line) }
			if quiet {
				progress = nil
			}
			res, err := g.client().BuildImages(cmd.Context(), args, progress)
			if err != nil {
				return apiFailure(err)
			}
			if asJSON {
				_ = printJSON(res)
			}
			failed := 0
			for _, im := range res.Images {
				what := im.Image
				if len(im.Packages) > 0 {
					what += " (packages: " + strings.Join(im.Packages, " ") + ")"
				}
				switch {
				case im.Error != "":
					failed++
					fmt.Fprintf(os.Stderr, "sandboxctl: %s for %s failed: %s\n", what, im.Language, im.Error)
				case asJSON:
				case im.Note != "":
					fmt.Printf("%s for %s: %s\n", what, im.Language, im.Note)
				default:
					fmt.Printf("built %s for %s in %s\n", what, im.Language, (time.Duration(im.DurationMS) * time.Millisecond).Round(100*time.Millisecond))
					if len(im.PulledBy) > 0 {
						fmt.Printf("  pulled by nodes %s\n", strings.Join(im.PulledBy, ", "))
					}
				}
			}
			if failed > 0 {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	build.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	build.Flags().BoolVarP(&quiet, "quiet", "q", false, "do not print the builds' output")
	cmd.AddCommand(build)
	return cmd
}
