package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// hostURI is the resource that says what the host offers.
const hostURI = "sandboxd://host"

// addGuides gives the agent what to read before it runs code: a resource
// listing what the host offers, and per language a resource and a prompt
// with its instructions (the operator's, or the shipped ones) and facts.
// The languages are those sandboxd has when the server starts; each read
// asks sandboxd again, so versions and limits are current.
func addGuides(s *mcp.Server, c *client.Client) {
	s.AddResource(&mcp.Resource{URI: hostURI, Name: "host", Title: "What this sandboxd host offers", MIMEType: "text/markdown",
		Description: "The languages this host runs, with versions, limits, packages and network, and how sandboxes behave."},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			langs, err := c.Languages(ctx)
			if err != nil {
				return nil, failure(err)
			}
			secrets, err := c.Secrets(ctx)
			if err != nil {
				return nil, failure(err)
			}
			return markdown(req.Params.URI, hostGuide(langs, secrets)), nil
		})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	langs, err := c.Languages(ctx)
	if err != nil {
		return // sandboxd is away: the host resource says so when read
	}
	for _, l := range langs {
		name := l.Name
		guide := func(ctx context.Context) (string, error) {
			langs, err := c.Languages(ctx)
			if err != nil {
				return "", failure(err)
			}
			for _, l := range langs {
				if l.Name == name {
					return languageGuide(l), nil
				}
			}
			return "", fmt.Errorf("sandboxd no longer has the language %s", name)
		}
		uri := "sandboxd://languages/" + name
		s.AddResource(&mcp.Resource{URI: uri, Name: name, Title: titleOf(l) + " in sandboxd", MIMEType: "text/markdown",
			Description: "How to run " + titleOf(l) + " code here: what it is for, its version, limits, packages and network."},
			func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				text, err := guide(ctx)
				if err != nil {
					return nil, err
				}
				return markdown(uri, text), nil
			})
		s.AddPrompt(&mcp.Prompt{Name: name, Title: "Use " + titleOf(l),
			Description: "Instructions for running " + titleOf(l) + " code in sandboxd, to put before a task."},
			func(ctx context.Context, _ *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				text, err := guide(ctx)
				if err != nil {
					return nil, err
				}
				return &mcp.GetPromptResult{Description: "Running " + titleOf(l) + " in sandboxd",
					Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}, nil
			})
	}
}

func markdown(uri, text string) *mcp.ReadResourceResult {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: text}}}
}

func titleOf(l api.Language) string {
	if l.DisplayName != "" {
		return l.DisplayName
	}
	return l.Name
}

// languageGuide is what an agent reads of one language: its instructions,
// then the facts that bound what a program may do.
func languageGuide(l api.Language) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s in sandboxd\n\n", titleOf(l))
	if l.Instructions != "" {
		b.WriteString(strings.TrimSpace(l.Instructions) + "\n\n")
	}
	fmt.Fprintf(&b, "- Run it: `run_code` with language %q", l.Name)
	if len(l.Aliases) > 0 {
		fmt.Fprintf(&b, " (or %s)", strings.Join(l.Aliases, ", "))
	}
	fmt.Fprintf(&b, "; in a session: `create_session` with that language, then `exec`.\n")
	if l.Version != "" {
		fmt.Fprintf(&b, "- Version: %s\n", l.Version)
	}
	fmt.Fprintf(&b, "- Limits of a run: %s\n", limitsText(l.Limits))
	if len(l.Packages) > 0 {
		fmt.Fprintf(&b, "- Installed besides the base image: %s\n", strings.Join(l.Packages, ", "))
	} else {
		b.WriteString("- Packages: only what the base image holds; nothing can be installed at run time.\n")
	}
	b.WriteString("- Network: " + networkText(l.Network) + "\n")
	if l.Contexts {
		b.WriteString("- Sessions keep interpreters (`exec` with a context): state persists between calls.\n")
	}
	if l.Error != "" {
		fmt.Fprintf(&b, "- Not ready now: %s\n", l.Error)
	}
	return b.String()
}

// hostGuide is what an agent reads of the host: every language, in one
// table, and what every sandbox is.
func hostGuide(langs []api.Language, secrets []api.SecretInfo) string {
	var b strings.Builder
	b.WriteString("# sandboxd on this host\n\n" + instructions + "\n\n")
	b.WriteString("| language | version | limits of a run | packages | network |\n|---|---|---|---|---|\n")
	for _, l := range langs {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", l.Name, orNone(l.Version), limitsText(l.Limits), orNone(strings.Join(l.Packages, ", ")), networkText(l.Network))
	}
	if len(secrets) > 0 {
		b.WriteString("\nSecrets (ask for them by name in `secrets`; the program reads `SANDBOXD_SECRET_<name>`, a placeholder sandboxd replaces with the value on the way to these hosts only):\n\n")
		for _, sec := range secrets {
			fmt.Fprintf(&b, "- %s: %s\n", sec.Name, strings.Join(sec.Hosts, ", "))
		}
	}
	b.WriteString("\nEach language has a resource (sandboxd://languages/NAME) and a prompt of the same name with how to use it.\n")
	return b.String()
}

func limitsText(l api.Limits) string {
	return fmt.Sprintf("%s, %s memory, %g CPU, %d processes", time.Duration(l.Timeout), l.Memory, l.CPUs, l.Pids)
}

func networkText(n api.Network) string {
	if len(n.Allow) == 0 {
		return "none"
	}
	return "only " + strings.Join(n.Allow, ", ") + " (through sandboxd's proxy)"
}

func orNone(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
