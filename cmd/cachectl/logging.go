package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// Log formats of --logging-format.
const (
	logFormatText = "text"
	logFormatJSON = "json"
)

// logOptions are the logging flags of long-running commands, named as in
// Kubernetes components: -v and --logging-format.
//
// Kubernetes components get them from k8s.io/component-base/logs, whose
// JSON format needs go.uber.org/zap; neither is a dependency of this module
// and a CLI does not need their feature gates and reconfiguration. klog's
// own text logger and logr's funcr JSON logger give the same two formats.
type logOptions struct {
	verbosity int
	format    string
}

// AddFlags adds -v and --logging-format.
func (o *logOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IntVarP(&o.verbosity, "v", "v", o.verbosity, "Log level verbosity: 2 logs one line per change, 3 also the objects of the initial list, 4 and above client-go's requests")
	fs.StringVar(&o.format, "logging-format", o.format, `Log format: "text" (klog's) or "json" (one JSON object per line)`)
}

// Validate checks the flags.
func (o *logOptions) Validate(cmd *cobra.Command) error {
	switch {
	case o.verbosity < 0:
		return usageErrorf(cmd, "-v must not be negative, got %d", o.verbosity)
	case o.format != logFormatText && o.format != logFormatJSON:
		return usageErrorf(cmd, "--logging-format must be %q or %q, got %q", logFormatText, logFormatJSON, o.format)
	}
	return nil
}

// logger returns a logger writing to w in the chosen format and verbosity.
func (o *logOptions) logger(w io.Writer) klog.Logger {
	if o.format == logFormatJSON {
		return funcr.NewJSON(func(obj string) { fmt.Fprintln(w, obj) }, funcr.Options{
			LogTimestamp: true, TimestampFormat: "2006-01-02T15:04:05.000000Z07:00", // RFC 3339 with microseconds
			Verbosity: o.verbosity,
		})
	}
	return textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(o.verbosity), textlogger.Output(w)))
}

// setKlogGlobals makes logger klog's, so that what client-go and klog log
// on their own (klog.V, utilruntime.HandleError) goes there too, with the
// same verbosity. klog allows it only before other goroutines log, so main
// does it, not tests.
func setKlogGlobals(logger klog.Logger, verbosity int) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", strconv.Itoa(verbosity))
	klog.SetLoggerWithOptions(logger, klog.ContextualLogger(true))
}

// eventLogger is the handler that logs one line per change of a store: at
// -v=2 the adds, updates and deletes once the store is synced, at -v=3 the
// initial list's objects too.
type eventLogger struct{ logger klog.Logger }

func (l eventLogger) OnAdd(obj interface{}, isInInitialList bool) {
	if isInInitialList {
		l.log(3, "ADDED", obj)
		return
	}
	l.log(2, "ADDED", obj)
}

func (l eventLogger) OnUpdate(_, obj interface{}) { l.log(2, "MODIFIED", obj) }

func (l eventLogger) OnDelete(obj interface{}) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		l.logger.V(2).Info("Event", "type", "DELETED", "key", d.Key, "finalStateUnknown", true)
		return
	}
	l.log(2, "DELETED", obj)
}

func (l eventLogger) log(level int, typ string, obj interface{}) {
	logger := l.logger.V(level)
	if !logger.Enabled() {
		return
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		logger.Info("Event", "type", typ, "objectType", fmt.Sprintf("%T", obj))
		return
	}
	logger.Info("Event", "type", typ, "object", klog.KObj(m), "resourceVersion", m.GetResourceVersion())
}
