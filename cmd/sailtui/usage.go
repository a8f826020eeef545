package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sailtui/sailtui/engine"
)

// explainArgs makes every command's argument errors say what the command takes (cobra's own
// are a bare "accepts 2 arg(s), received 0"), and an unknown command name what was meant.
// Usage lines are the source: "label SLUG SNAPSHOT --label TEXT" is what `snapshot label` takes.
func explainArgs(c *cobra.Command) {
	for _, sub := range c.Commands() {
		explainArgs(sub)
	}
	// SuggestionsFor reads it as is; only cobra's own unknown-command path defaults it.
	c.SuggestionsMinimumDistance = 2
	switch {
	case !c.HasParent():
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			return unknownCommand(cmd, args[0])
		}
	case !c.Runnable() && c.HasSubCommands():
		// A group (snapshot, project...): alone it shows its help; with a word it does not
		// know, cobra would show the help too and exit 0, as if that were an answer.
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return unknownCommand(cmd, args[0])
		}
	case c.Args != nil:
		check := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return argsError(cmd, args)
			}
			return nil
		}
	}
}

// takes is what a command's usage line says it takes after its name.
func takes(c *cobra.Command) string {
	return strings.TrimSpace(strings.TrimPrefix(c.Use, c.Name()))
}

func argsError(c *cobra.Command, args []string) error {
	want := takes(c)
	if want == "" {
		want = "no arguments"
	}
	got := "no arguments"
	if len(args) > 0 {
		q := make([]string, len(args))
		for i, a := range args {
			q[i] = strconv.Quote(a)
		}
		noun := "arguments"
		if len(args) == 1 {
			noun = "argument"
		}
		got = fmt.Sprintf("%d %s (%s)", len(args), noun, strings.Join(q, " "))
	}
	return fmt.Errorf("%s takes %s; got %s (see: %s --help): %w", c.CommandPath(), want, got, c.CommandPath(), engine.ErrBadInput)
}

func unknownCommand(c *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %s", name, c.CommandPath())
	if s := c.SuggestionsFor(name); len(s) > 0 {
		msg += "; did you mean " + c.CommandPath() + " " + strings.Join(s, " or ") + "?"
	}
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	return fmt.Errorf("%s (its commands: %s; see: %s --help): %w", msg, strings.Join(names, ", "), c.CommandPath(), engine.ErrBadInput)
}

// readOnlyWhy says what made sailtui read-only and how to lift it, for a refused action.
func readOnlyWhy() string {
	if v := os.Getenv("SAILTUI_READONLY"); v != "" {
		if on, err := strconv.ParseBool(v); err == nil && on {
			return "sailtui is read-only because SAILTUI_READONLY=" + v + " is set (or --readonly given); unset it to change things"
		}
	}
	return "sailtui is read-only because --readonly was given; run the command without it to change things"
}
