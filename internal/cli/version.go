package cli

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is set at build time with -ldflags "-X github.com/heraldhq/herald/internal/cli.Version=…";
// otherwise the module version from the build info is used.
var Version = ""

// buildInfo is what `version --json` prints.
type buildInfo struct {
	Version   string `json:"version"`
	Module    string `json:"module"`
	Revision  string `json:"revision,omitempty"`
	Time      string `json:"time,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
}

// readBuildInfo takes the module version and the VCS stamp from the
// binary's build info (go build stamps them in a git checkout; go run and
// go test do not, so the revision may be empty).
func readBuildInfo() buildInfo {
	b := buildInfo{Version: Version, Module: "github.com/heraldhq/herald", GoVersion: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if b.Version == "" {
		b.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// version is the one-line version: "v1.2.3", or for a build from a
// checkout "(devel) 0123456789ab 2026-12-01T08:00:00Z" (+ "dirty").
func version() string {
	b := readBuildInfo()
	v := b.Version
	if v == "" {
		v = "(devel)"
	}
	if b.Revision != "" {
		v += " " + b.Revision[:min(12, len(b.Revision))]
		if b.Time != "" {
			v += " " + b.Time
		}
		if b.Modified {
			v += " dirty"
		}
	}
	return v + " " + b.GoVersion
}

func (a *app) versionCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print Herald's version (module version, VCS revision, Go version)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if asJSON {
				return json.NewEncoder(a.stdout).Encode(readBuildInfo())
			}
			fmt.Fprintf(a.stdout, "herald %s\n", version())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
