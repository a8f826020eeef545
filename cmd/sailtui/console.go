package main

import (
	"github.com/spf13/cobra"

	"github.com/sailtui/sailtui/ui"
)

// runConsole opens the interactive console.
func runConsole(cmd *cobra.Command, a *app, demo bool) error {
	ctx := cmd.Context()
	eng, err := a.engine(ctx)
	if err != nil {
		return err
	}
	if demo {
		if err := seedDemo(ctx, eng); err != nil {
			return err
		}
	}
	return ui.Run(ctx, eng, ui.Options{
		Skin: a.cfg.Skin, ReadOnly: a.cfg.ReadOnly, Mode: eng.Mode(), StoreName: eng.StoreName(),
	})
}
