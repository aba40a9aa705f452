package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	"github.com/boltinformer/boltinformer/internal/admin"
	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// infoOptions are the flags of cachectl info.
type infoOptions struct {
	source sourceOptions
	output string
	pages  bool
}

// AddFlags adds info's flags.
func (o *infoOptions) AddFlags(fs *pflag.FlagSet) {
	o.source.AddFlags(fs)
	fs.StringVarP(&o.output, "output", "o", "", "Output format: wide, json or yaml (default: a summary and a table of stores)")
	fs.BoolVar(&o.pages, "pages", false, "Also walk the file's pages (reads the whole file, --db only) and say how many are free and what compact would reclaim")
}

func newInfoCommand(e *env) *cobra.Command {
	o := &infoOptions{source: newSourceOptions(true)}
	cmd := &cobra.Command{
		Use:   "info",
		Short: "Describe a cache file: schema, size and every store",
		Long: `Describe a cache file without decoding any object: its schema version and
size, and per store the resource it caches, its identity (namespace and
selectors), object count, stored resourceVersion, last write and indexes
with their number of distinct values.`,
		Example: `  cachectl info --db cache.db
  cachectl info --pages --db cache.db     # free pages and what compact would reclaim
  cachectl info -o json --socket /run/agent.sock`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.source.Validate(cmd); err != nil {
				return err
			}
			switch o.output {
			case "", "wide", "json", "yaml":
			default:
				return usageErrorf(cmd, "unknown output format %q; one of: wide, json, yaml", o.output)
			}
			if o.pages && (o.source.db == "" || o.output == "json" || o.output == "yaml") {
				return usageErrorf(cmd, "--pages needs --db and the text output (a live process reports its free pages as the boltinformer_db_freelist_pages metric)")
			}
			return o.run(cmd.Context(), e)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func (o *infoOptions) run(ctx context.Context, e *env) error {
	r, info, err := o.source.openInfo(ctx)
	if err != nil {
		return err
	}
	defer r.Close()
	out := e.streams.Out
	switch o.output {
	case "json":
		b, err := json.MarshalIndent(info, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(info)
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	}
	if err := printInfo(out, info, o.output == "wide", o.source.socket, e.now()); err != nil || !o.pages {
		return err
	}
	u, err := cachefile.PageUsage(o.source.db, o.source.timeout)
	if err != nil {
		return fileError(o.source.db, err)
	}
	_, err = fmt.Fprintf(out, "\nPages:    %d of %s in use, %d free; compact would reclaim about %s\n",
		u.InUse, humanBytes(int64(u.PageSize)), u.Free(), humanBytes(u.Reclaimable()))
	return err
}

// printInfo prints a summary of the file and a table of its stores.
func printInfo(out io.Writer, info *admin.Info, wide bool, socket string, now time.Time) error {
	file := info.Path
	if info.Live {
		file += fmt.Sprintf(" (live, through %s)", socket)
	}
	fmt.Fprintf(out, "File:     %s\n", file)
	fmt.Fprintf(out, "Size:     %s (%d bytes)\n", humanBytes(info.Size), info.Size)
	fmt.Fprintf(out, "Schema:   v%d\n", info.SchemaVersion)
	if info.CreatedAt != "" {
		fmt.Fprintf(out, "Created:  %s\n", info.CreatedAt)
	}
	if info.WriterVersion != "" {
		fmt.Fprintf(out, "Writer:   %s\n", info.WriterVersion)
	}
	fmt.Fprintf(out, "Stores:   %d\n", len(info.Stores))
	if len(info.Stores) == 0 {
		return nil
	}
	fmt.Fprintln(out)
	t := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Store", Type: "string"},
		{Name: "Resource", Type: "string"},
		{Name: "Namespace", Type: "string"},
		{Name: "Selectors", Type: "string"},
		{Name: "Objects", Type: "integer"},
		{Name: "ResourceVersion", Type: "string"},
		{Name: "Last Write", Type: "string"},
		{Name: "Status", Type: "string"},
		{Name: "Indexes", Type: "string"},
		{Name: "Kind", Type: "string", Priority: 1},
		{Name: "Updated At", Type: "string", Priority: 1},
		{Name: "Served", Type: "string", Priority: 1},
	}}
	for _, s := range info.Stores {
		resource, ns, selectors, kind := "<unknown>", "<all>", "<none>", "<unknown>"
		if id := s.Identity; id != nil {
			if id.Resource != "" {
				resource = id.Resource
				if id.Group != "" {
					resource += "." + id.Group
				}
			}
			if id.Kind != "" {
				// Kind.version.group, as kubectl spells a fully qualified kind.
				kind = strings.TrimSuffix(id.Kind+"."+id.Version+"."+id.Group, ".")
			}
			if id.Namespace != "" {
				ns = id.Namespace
			}
			var sel []string
			if id.LabelSelector != "" {
				sel = append(sel, "labels: "+id.LabelSelector)
			}
			if id.FieldSelector != "" {
				sel = append(sel, "fields: "+id.FieldSelector)
			}
			if len(sel) > 0 {
				selectors = strings.Join(sel, "; ")
			}
		}
		lastWrite, updatedAt := "<never>", "<never>"
		if !s.UpdatedAt.IsZero() {
			lastWrite = duration.HumanDuration(now.Sub(s.UpdatedAt)) + " ago"
			updatedAt = s.UpdatedAt.UTC().Format(time.RFC3339)
		}
		status := "synced"
		switch {
		case s.Relisting:
			status = "relisting (" + s.RelistReason + ")"
		case s.ResourceVersion == "":
			status = "never synced"
		}
		if !s.Served {
			status += ", not served by the process"
		}
		t.Rows = append(t.Rows, metav1.TableRow{Cells: []interface{}{
			s.Name, resource, ns, selectors, int64(s.Objects), orNone(s.ResourceVersion), lastWrite, status,
			indexSummary(s.Indexes), kind, updatedAt, fmt.Sprint(s.Served),
		}})
	}
	return printers.NewTablePrinter(printers.PrintOptions{Wide: wide}).PrintObj(t, out)
}

// indexSummary lists indexes with their number of distinct values: "namespace=3,node=2".
func indexSummary(ix map[string]int) string {
	if len(ix) == 0 {
		return "<none>"
	}
	names := make([]string, 0, len(ix))
	for n := range ix {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		names[i] = fmt.Sprintf("%s=%d", n, ix[n])
	}
	return strings.Join(names, ",")
}
