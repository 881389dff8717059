// Command herald runs the Herald relay and its operator tools; see
// `herald --help` and docs/cli.md.
package main

import (
	"context"
	"os"

	"github.com/heraldhq/herald/internal/cli"
)

func main() {
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
