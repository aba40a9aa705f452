package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	"github.com/boltinformer/boltinformer/snapshot"
)

// snapshotStatusOptions are the flags of cachectl snapshot status.
type snapshotStatusOptions struct {
	output string
}

// AddFlags adds snapshot status's flags.
func (o *snapshotStatusOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.output, "output", "o", "", "Output format: json or yaml (default: a summary and a table of stores)")
}

func newSnapshotStatusCommand(e *env) *cobra.Command {
	o := &snapshotStatusOptions{}
	cmd := &cobra.Command{
		Use:   "status FILE",
		Short: "Describe a snapshot and verify its checksum",
		Long: `Read a snapshot without restoring it: its header (schema version, when and
from which file it was taken, the stores with their resourceVersions and
object counts) and whether its SHA-256 matches its content. Exits 1 when the
checksum does not match.`,
		Example: `  cachectl snapshot status backup.snap
  cachectl snapshot status backup.snap -o json`,
		Args: exactArgs(1, "FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch o.output {
			case "", "json", "yaml":
			default:
				return usageErrorf(cmd, "unknown output format %q; one of: json, yaml", o.output)
			}
			return o.run(e, args[0])
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func (o *snapshotStatusOptions) run(e *env, path string) error {
	if _, err := os.Stat(path); err != nil {
		return snapshotError(path, err)
	}
	prog := e.newProgress("reading "+path, 0, false)
	stop := prog.tick()
	rep, err := snapshot.Status(path)
	stop()
	prog.finish()
	if err != nil {
		return snapshotError(path, err)
	}
	out := e.streams.Out
	switch o.output {
	case "json":
		b, err := json.MarshalIndent(rep, "", "    ")
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s\n", b)
	case "yaml":
		b, err := yaml.Marshal(rep)
		if err != nil {
			return err
		}
		_, _ = out.Write(b)
	default:
		if err := printSnapshotStatus(e, rep); err != nil {
			return err
		}
	}
	if !rep.ChecksumValid {
		return newError(snapshot.ErrChecksum, "snapshot %s is corrupt: it records sha256 %s, its content hashes to %s", path, rep.Checksum, rep.Computed)
	}
	return nil
}

func printSnapshotStatus(e *env, rep snapshot.Report) error {
	out := e.streams.Out
	h := rep.Header
	checksum := "ok"
	if !rep.ChecksumValid {
		checksum = "MISMATCH (computed " + rep.Computed + ")"
	}
	fmt.Fprintf(out, "Snapshot: %s\n", rep.Path)
	fmt.Fprintf(out, "Size:     %s (%d bytes; database %d bytes)\n", humanBytes(rep.Size), rep.Size, h.DBSize)
	fmt.Fprintf(out, "Format:   v%d\n", rep.FormatVersion)
	fmt.Fprintf(out, "SHA-256:  %s (%s)\n", rep.Checksum, checksum)
	fmt.Fprintf(out, "Taken:    %s (%s ago), bbolt tx %d\n", h.TakenAt.UTC().Format("2006-01-02T15:04:05Z"), age(metav1.NewTime(h.TakenAt), e.now()), h.TxID)
	fmt.Fprintf(out, "Source:   %s\n", orNone(h.Source))
	fmt.Fprintf(out, "Schema:   v%d (file created %s by %s)\n", h.SchemaVersion, orNone(h.FileCreatedAt), orNone(h.WriterVersion))
	fmt.Fprintf(out, "Stores:   %d, %d object(s)\n", len(h.Stores), totalObjects(h))
	fmt.Fprintf(out, "Encryption: %s\n", snapshotEncryption(rep))
	if len(h.Stores) == 0 {
		return nil
	}
	fmt.Fprintln(out)
	t := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Store", Type: "string"},
		{Name: "Resource", Type: "string"},
		{Name: "Objects", Type: "integer"},
		{Name: "ResourceVersion", Type: "string"},
		{Name: "Status", Type: "string"},
	}}
	for _, s := range h.Stores {
		resource := "<unknown>"
		if id := s.Identity; id != nil && id.Resource != "" {
			resource = strings.TrimSuffix(id.Resource+"."+id.Group, ".")
		}
		status := "synced"
		switch {
		case s.Relisting:
			status = "relisting (restored file relists first)"
		case s.RV == "":
			status = "never synced"
		}
		t.Rows = append(t.Rows, metav1.TableRow{Cells: []interface{}{s.Name, resource, int64(s.Objects), orNone(s.RV), status}})
	}
	return printers.NewTablePrinter(printers.PrintOptions{}).PrintObj(t, out)
}
