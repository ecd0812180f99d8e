package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/internal/mcpserver"
)

func newMCPCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve the Model Context Protocol on stdin/stdout, for AI agents",
		Long: `Serve the Model Context Protocol (MCP) on stdin/stdout, bridging an AI
agent to sandboxd: tools to list languages, run code, validate it, and
create, use and close sessions with their files.

Add it to an MCP client as a stdio server, e.g. for Claude Desktop:

  {"mcpServers": {"sandboxd": {"command": "sandboxctl", "args": ["mcp"]}}}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := mcpserver.Serve(cmd.Context(), mcpserver.New(g.client(), version), os.Stdin, os.Stdout)
			if err != nil && cmd.Context().Err() == nil {
				return fail("mcp: %v", err)
			}
			return nil
		},
	}
}
