package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, &env{
		name:       filepath.Base(os.Args[0]),
		streams:    genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
		now:        time.Now,
		isTerminal: isTerminal,
		setKlog:    setKlogGlobals,
	}, os.Args[1:])
	stop()
	os.Exit(code)
}

// env is what commands take from the world outside; tests replace it.
type env struct {
	// name is the name the binary was run as: "kubectl-cache" when kubectl
	// runs it as the plugin of "kubectl cache".
	name    string
	streams genericiooptions.IOStreams
	// now is the clock for ages and elapsed times.
	now func() time.Time
	// isTerminal reports whether w is a terminal; progress is shown only then.
	isTerminal func(w io.Writer) bool
	// setKlog, if set, makes a long-running command's logger klog's global
	// one, with its verbosity.
	setKlog func(logger klog.Logger, verbosity int)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
