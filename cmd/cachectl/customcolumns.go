package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"
)

// customColumnsPrinter prints -o custom-columns=HEADER:PATH,... (or the
// two-line custom-columns-file) as kubectl does: one tab-aligned row per
// object, "<none>" for a path that finds nothing, several values joined
// with commas.
type customColumnsPrinter struct {
	headers   []string
	paths     []*jsonpath.JSONPath
	noHeaders bool
	// printedHeader is set once the header line is out (a watch prints it once).
	printedHeader bool
}

// relaxedPathRE accepts "a.b", ".a.b", "{a.b}" and "{.a.b}", as kubectl.
var relaxedPathRE = regexp.MustCompile(`^\{\.?([^{}]+)\}$|^\.?([^{}]+)$`)

// relaxedPath turns a kubectl column path into a JSONPath template.
func relaxedPath(expr string) (string, error) {
	if expr == "" {
		return "", nil
	}
	m := relaxedPathRE.FindStringSubmatch(expr)
	if m == nil {
		return "", fmt.Errorf("unexpected path string %q, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'", expr)
	}
	field := m[1]
	if field == "" {
		field = m[2]
	}
	return "{." + field + "}", nil
}

func newCustomColumns(headers, specs []string, noHeaders bool) (*customColumnsPrinter, error) {
	p := &customColumnsPrinter{headers: headers, noHeaders: noHeaders}
	for i, spec := range specs {
		tmpl, err := relaxedPath(spec)
		if err != nil {
			return nil, err
		}
		jp := jsonpath.New(fmt.Sprintf("column%d", i)).AllowMissingKeys(true)
		if err := jp.Parse(tmpl); err != nil {
			return nil, fmt.Errorf("column %s: %w", headers[i], err)
		}
		p.paths = append(p.paths, jp)
	}
	return p, nil
}

// customColumnsFromSpec parses "HEADER:PATH,HEADER:PATH".
func customColumnsFromSpec(spec string, noHeaders bool) (*customColumnsPrinter, error) {
	if spec == "" {
		return nil, fmt.Errorf("custom-columns format specified but no custom columns given")
	}
	var headers, specs []string
	for _, part := range strings.Split(spec, ",") {
		h, s, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("unexpected custom-columns spec: %s, expected <header>:<json-path-expr>", part)
		}
		headers, specs = append(headers, h), append(specs, s)
	}
	return newCustomColumns(headers, specs, noHeaders)
}

// customColumnsFromFile parses a file of two lines: the headers and the
// paths, each separated by white space.
func customColumnsFromFile(r io.Reader, noHeaders bool) (*customColumnsPrinter, error) {
	sc := bufio.NewScanner(r)
	if !sc.Scan() {
		return nil, fmt.Errorf("invalid template, missing header line. Expected format is one line of space separated headers, one line of space separated column specs")
	}
	headers := strings.Fields(sc.Text())
	if !sc.Scan() {
		return nil, fmt.Errorf("invalid template, missing spec line. Expected format is one line of space separated headers, one line of space separated column specs")
	}
	specs := strings.Fields(sc.Text())
	if len(headers) != len(specs) {
		return nil, fmt.Errorf("number of headers (%d) and field specifications (%d) don't match", len(headers), len(specs))
	}
	return newCustomColumns(headers, specs, noHeaders)
}

// PrintObj prints an object or every item of a list.
func (p *customColumnsPrinter) PrintObj(obj runtime.Object, out io.Writer) error {
	w := printers.GetNewTabWriter(out)
	defer w.Flush()
	if !p.noHeaders && !p.printedHeader {
		fmt.Fprintln(w, strings.Join(p.headers, "\t"))
		p.printedHeader = true
	}
	objs := []runtime.Object{obj}
	if meta.IsListType(obj) {
		var err error
		if objs, err = meta.ExtractList(obj); err != nil {
			return err
		}
	}
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("custom-columns: unexpected object type %T", o)
		}
		cells := make([]string, len(p.paths))
		for i, jp := range p.paths {
			results, err := jp.FindResults(u.Object)
			if err != nil {
				return err
			}
			var values []string
			for _, r := range results {
				for _, v := range r {
					values = append(values, printers.EscapeTerminal(fmt.Sprint(v.Interface())))
				}
			}
			if len(values) == 0 {
				values = []string{"<none>"}
			}
			cells[i] = strings.Join(values, ",")
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	return nil
}
