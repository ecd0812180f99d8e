package main

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
)

func newProjectCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "project",
		Short: "Manage projects: file sets sessions see read-only at /workspace/project_files",
	}
	cmd.AddCommand(newProjectCreateCmd(g), newProjectLsCmd(g), newProjectUploadCmd(g),
		newProjectDownloadCmd(g), newProjectRmCmd(g))
	return cmd
}

func newProjectCreateCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "create NAME",
		Short: "Create an empty project and print its id",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := g.client().CreateProject(cmd.Context(), args[0])
			if err != nil {
				return apiFailure(err)
			}
			fmt.Println(p.ID)
			return nil
		},
	}
}

func newProjectLsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls [PROJECT]",
		Short: "List projects, or the files of one",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := g.client()
			if len(args) == 1 {
				p, err := c.Project(cmd.Context(), args[0])
				if err != nil {
					return apiFailure(err)
				}
				if asJSON {
					return printJSON(p)
				}
				table("NAME\tSIZE\tSHA256\tADDED", func(w *tabwriter.Writer) {
					for _, f := range p.Files {
						fmt.Fprintf(w, "%s\t%s\t%.12s\t%s\n", f.Name, api.ByteSize(f.Size), f.SHA256, f.AddedAt.Local().Format(time.DateTime))
					}
				})
				return nil
			}
			list, err := c.Projects(cmd.Context())
			if err != nil {
				return apiFailure(err)
			}
			if asJSON {
				return printJSON(list)
			}
			table("ID\tNAME\tFILES\tSIZE\tSESSIONS", func(w *tabwriter.Writer) {
				for _, p := range list {
					fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%d\n", p.ID, p.Name, len(p.Files), api.ByteSize(p.Size), len(p.Sessions))
				}
			})
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newProjectUploadCmd(g *globals) *cobra.Command {
	var (
		name      string
		overwrite bool
	)
	cmd := &cobra.Command{
		Use:   "upload PROJECT FILE...",
		Short: "Add files to a project (a name in use gets a numbered variant unless --overwrite)",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if name != "" && len(args) != 2 {
				return fail("--name applies to a single file")
			}
			for _, local := range args[1:] {
				f, err := os.Open(local)
				if err != nil {
					return fail("%v", err)
				}
				stored := name
				if stored == "" {
					stored = filepath.Base(local)
				}
				pf, err := g.client().AddProjectFile(cmd.Context(), args[0], stored, f, overwrite)
				f.Close()
				if err != nil {
					return apiFailure(err)
				}
				fmt.Println(pf.Name)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "name to store the file under (default: its base name)")
	cmd.Flags().BoolVar(&overwrite, "overwrite", false, "replace a file of the same name")
	return cmd
}

func newProjectDownloadCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "download PROJECT NAME [DEST]",
		Short: "Download a project file (to DEST, a directory, or - for stdout; default: its name here)",
		Args:  cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := g.client().GetProjectFile(cmd.Context(), args[0], args[1])
			if err != nil {
				return apiFailure(err)
			}
			defer body.Close()
			dst := filepath.Base(args[1])
			if len(args) == 3 {
				dst = args[2]
			}
			return save(body, dst, path.Base(args[1]))
		},
	}
}

func newProjectRmCmd(g *globals) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "rm PROJECT",
		Short: "Remove a project no session uses (or one file of it with --file)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if file != "" {
				err = g.client().DeleteProjectFile(cmd.Context(), args[0], file)
			} else {
				err = g.client().DeleteProject(cmd.Context(), args[0])
			}
			return orFailure(err)
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "remove only this file of the project")
	return cmd
}
