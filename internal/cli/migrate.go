package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/config"
)

func (a *app) migrateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade every lane's outbox table (in every store, or --store's; each store is tried)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := a.loadConfig()
			if err != nil {
				return err
			}
			files, err := a.storeFiles(f)
			if err != nil {
				return err
			}
			// Each store is migrated, whichever failed before it: the
			// ones that could be are said on stdout, the others named in
			// the error.
			var failed []error
			for _, sf := range files {
				if err := a.migrate(cmd.Context(), sf, len(files) > 1); err != nil {
					failed = append(failed, storeError(sf, len(files) > 1, err))
				}
			}
			return errors.Join(failed...)
		},
	}
}

// migrate migrates the lanes' tables of one store's part of the config;
// named says the store's name in what it prints.
func (a *app) migrate(ctx context.Context, f *config.File, named bool) error {
	rt, err := openFile(ctx, f, openBare)
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := rt.Migrate(ctx); err != nil {
		return err
	}
	if named {
		fmt.Fprintf(a.stdout, "store %s: ", f.StoreName())
	}
	fmt.Fprintln(a.stdout, "migrated")
	a.printLogNeeds(ctx, rt)
	return nil
}
