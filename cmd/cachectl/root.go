package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// subcommands builds the command tree under the root. sync.go appends
// newSyncCommand here from an init function.
var subcommands = []func(*env) *cobra.Command{
	newGetCommand,
	newInfoCommand,
	newCheckCommand,
	newCompactCommand,
	newSnapshotCommand,
	newMigrateCommand,
	newVersionCommand,
}

// pluginName is the name under which kubectl finds cachectl as the
// plugin of "kubectl cache" (make install links it).
const pluginName = "kubectl-cache"

// newRootCommand builds cachectl's command tree writing to e's streams.
func newRootCommand(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "cachectl",
		Short: "Read and maintain boltinformer cache files",
		Long: `cachectl reads and maintains the bbolt files in which boltinformer keeps
client-go informer caches.

Read a file with --db PATH: it is opened read-only and never modified. While
a process owns the file (it holds the file's lock), read it through that
process's admin socket with --socket PATH instead; the output is the same.`,
		Example: `  # List the Pods of every namespace cached in a file
  cachectl get pods -A --db /var/lib/agent/cache.db

  # The same, from the running agent
  cachectl get pods -A --socket /run/agent/cache.sock

  # What does the file hold, and is it consistent?
  cachectl info --db cache.db
  cachectl check --db cache.db`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          unknownSubcommand,
		RunE:          func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	if e.name == pluginName {
		// Help, usage and errors then read "kubectl cache get …".
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl cache"}
	}
	root.SetIn(e.streams.In)
	root.SetOut(e.streams.Out)
	root.SetErr(e.streams.ErrOut)
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		// "cachectl inf --db x": the root has no --db, but the mistake is
		// the command's name; say that, with a suggestion.
		if !cmd.HasParent() && cmd.Flags().NArg() > 0 {
			return unknownSubcommand(cmd, cmd.Flags().Args())
		}
		return usageErrorf(cmd, "%v", err)
	})
	for _, newCmd := range subcommands {
		root.AddCommand(newCmd(e))
	}
	if e.name == pluginName {
		var rename func(c *cobra.Command)
		rename = func(c *cobra.Command) {
			c.Example = strings.ReplaceAll(c.Example, "cachectl ", "kubectl cache ")
			for _, sub := range c.Commands() {
				rename(sub)
			}
		}
		rename(root)
	}
	return root
}

// run executes the command line args and returns the exit code, printing
// an error as one line on stderr: "error: …", or, for the apiserver's
// errors, kubectl's line ("Error from server (BadRequest): …").
func run(ctx context.Context, e *env, args []string) int {
	root := newRootCommand(e)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	switch {
	case errors.Is(err, errServer):
		fmt.Fprintln(e.streams.ErrOut, oneLine(err))
	case err != nil:
		fmt.Fprintf(e.streams.ErrOut, "error: %s\n", oneLine(err))
	}
	return exitCode(err)
}

// unknownSubcommand is the Args of a command that only groups others: an
// argument there is a mistyped subcommand.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", s[0])
	}
	return usageErrorf(cmd, "%s", msg)
}

// exactArgs and noArgs are cobra's validators returning usage errors.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf(cmd, "%s: want %s, got %d argument(s)", cmd.Name(), what, len(args))
		}
		return nil
	}
}

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf(cmd, "%s takes no arguments, got %s", cmd.Name(), strings.Join(args, " "))
	}
	return nil
}
