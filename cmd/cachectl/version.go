package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/migrations"
)

// version is cachectl's version, set at build time by make install
// (-ldflags -X main.version=…); otherwise the module's version.
var version = ""

// versionOptions are the flags of cachectl version.
type versionOptions struct {
	output string
}

// AddFlags adds version's flags.
func (o *versionOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.output, "output", "o", "", "One of json or yaml (default: text)")
}

// versionInfo is what cachectl version prints, as kubectl's clientVersion.
type versionInfo struct {
	ClientVersion clientVersion `json:"clientVersion"`
	Schema        schemaVersion `json:"schemaVersion"`
}

type clientVersion struct {
	GitVersion string `json:"gitVersion"`
	GitCommit  string `json:"gitCommit,omitempty"`
	// Writer is what cachectl records as the writer of a file it writes.
	Writer    string `json:"writer"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// schemaVersion is the range of cache file schemas this build handles.
type schemaVersion struct {
	// Current is the schema this build reads and writes.
	Current uint64 `json:"current"`
	// OldestMigratable is the oldest schema cachectl migrate upgrades.
	OldestMigratable uint64 `json:"oldestMigratable"`
}

func newVersionCommand(e *env) *cobra.Command {
	o := &versionOptions{}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print cachectl's version and the cache file schema it reads and writes",
		Example: `  cachectl version
  cachectl version -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch o.output {
			case "", "json", "yaml":
			default:
				return usageErrorf(cmd, "unknown output format %q; one of: json, yaml", o.output)
			}
			return o.run(e)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func currentVersion() versionInfo {
	oldest, current := migrations.Versions()
	v := versionInfo{
		ClientVersion: clientVersion{GitVersion: version, Writer: cachefile.WriterVersion, GoVersion: runtime.Version(),
			Platform: runtime.GOOS + "/" + runtime.GOARCH},
		Schema: schemaVersion{Current: current, OldestMigratable: oldest},
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v.ClientVersion.GitVersion == "" && bi.Main.Version != "" {
			v.ClientVersion.GitVersion = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v.ClientVersion.GitCommit = s.Value
			}
		}
	}
	if v.ClientVersion.GitVersion == "" {
		v.ClientVersion.GitVersion = "(devel)"
	}
	return v
}

func (o *versionOptions) run(e *env) error {
	v := currentVersion()
	out := e.streams.Out
	switch o.output {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	}
	fmt.Fprintf(out, "Client Version: %s\n", v.ClientVersion.GitVersion)
	fmt.Fprintf(out, "Schema Version: v%d (reads and writes v%d; migrates from v%d)\n", v.Schema.Current, v.Schema.Current, v.Schema.OldestMigratable)
	return nil
}
